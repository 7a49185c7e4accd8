package job

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/boshpath"
)

// Load reads l.BPMConfig(name) and parses it as Parse does, then sets Errand
// (ROOT/jobs/NAME/bin/run exists) and checks each executable: it must exist,
// be a regular file and have an execute bit. A bare name is looked up in the
// process's PATH (see Environ), relative entries taken from Workdir, and
// ResolvedExecutable is set to what was found. Errors are an ErrorList.
func Load(l boshpath.Layout, name string) (*Job, []Warning, error) {
	path := l.BPMConfig(name)
	if err := checkJobName(name); err != nil {
		return nil, nil, ErrorList{{File: path, Msg: "invalid job name: " + err.Error(), Err: err}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		cause := err
		if errors.As(err, &pe) {
			cause = pe.Err
		}
		return nil, nil, ErrorList{{File: path, Msg: "cannot read: " + cause.Error(), Err: err}}
	}
	j, warns, err := Check(l, name, path, data, true)
	if err != nil {
		return nil, warns, err
	}
	_, err = os.Stat(filepath.Join(l.JobDir(name), "bin", "run"))
	j.Errand = err == nil
	return j, warns, nil
}

// Check parses data as Parse does (path only names it in messages) and,
// with executables, checks each executable as Load does: it must exist,
// be a regular file and have an execute bit, a bare name looked up in the
// process's PATH. It is what vigil check runs on a file of its own.
func Check(l boshpath.Layout, name, path string, data []byte, executables bool) (*Job, []Warning, error) {
	j, warns, errs := parse(l, name, path, data)
	for i := range j.Processes {
		if !executables {
			break
		}
		p := &j.Processes[i]
		if err := checkOpenFilesHere(p); err != nil {
			errs = append(errs, err)
		}
		if p.Executable == "" {
			continue // already reported
		}
		resolved, err := findExecutable(l, *p)
		if err != nil {
			field := p.field("executable")
			errs = append(errs, &ConfigError{File: path, Line: lineOf(p.at.lines, field), Field: field, Msg: err.Error(), Err: err})
			continue
		}
		p.ResolvedExecutable = resolved
	}
	if len(errs) > 0 {
		sortByLine(errs)
		return nil, warns, errs
	}
	return j, warns, nil
}

// LoadAll loads every job under l.JobsDir() that has a config/bpm.yml, in
// name order; directories without one are skipped. If only is non-empty,
// just those jobs are loaded, and a name with no job directory is an error.
// One invalid job never hides the others: the valid jobs come back with one
// *LoadError per invalid job (its text starts "job NAME: ").
func LoadAll(l boshpath.Layout, only []string) (jobs []*Job, warnings []Warning, errs []error) {
	names, errs := jobNames(l, only)
	for _, name := range names {
		j, w, err := Load(l, name)
		warnings = append(warnings, w...)
		if err != nil {
			errs = append(errs, &LoadError{Job: name, Err: err})
			continue
		}
		jobs = append(jobs, j)
	}
	return jobs, warnings, errs
}

func jobNames(l boshpath.Layout, only []string) ([]string, []error) {
	var names []string
	var errs []error
	if len(only) > 0 {
		for _, name := range slices.Compact(slices.Sorted(slices.Values(only))) {
			if err := boshpath.CheckName(name); err != nil {
				errs = append(errs, &LoadError{Job: name, Err: err})
			} else if _, err := os.Stat(l.JobDir(name)); err != nil {
				errs = append(errs, &LoadError{Job: name, Err: fmt.Errorf("unknown job: %w", err)})
			} else {
				names = append(names, name)
			}
		}
		return names, errs
	}
	entries, err := os.ReadDir(l.JobsDir())
	if err != nil {
		return nil, []error{fmt.Errorf("list jobs: %w", err)}
	}
	for _, e := range entries { // sorted by name
		_, err := os.Stat(l.BPMConfig(e.Name())) // follows the symlinks BOSH puts here
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		names = append(names, e.Name()) // other errors are Load's to report
	}
	return names, errs
}

// LoadError is the error LoadAll gives for one job that could not be loaded.
type LoadError struct {
	Job string
	Err error // an ErrorList, or the reason the job could not be read
}

func (e *LoadError) Error() string { return "job " + e.Job + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *LoadError) Unwrap() error { return e.Err }

// findExecutable returns the absolute path the process's executable names,
// or an error saying why it cannot be run. A name without a slash is looked
// up in the process's PATH as execvp would, from Workdir.
func findExecutable(l boshpath.Layout, p Process) (string, error) {
	if !isBareName(p.Executable) {
		path := p.Executable
		if !filepath.IsAbs(path) {
			path = filepath.Join(p.Workdir, path)
		}
		return path, checkExecutable(path)
	}
	search := p.envMap(l)["PATH"]
	var firstErr error
	for _, dir := range filepath.SplitList(search) {
		if !filepath.IsAbs(dir) { // "" and "." included
			dir = filepath.Join(p.Workdir, dir)
		}
		path := filepath.Join(dir, p.Executable)
		err := checkExecutable(path)
		if err == nil {
			return path, nil
		}
		if firstErr == nil && !errors.Is(err, fs.ErrNotExist) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", &exeError{fmt.Sprintf("executable %q not found in PATH %s", p.Executable, search), fs.ErrNotExist}
}

func isBareName(exe string) bool { return exe != "" && !strings.Contains(exe, "/") }

// checkExecutable reports why path cannot be executed, or nil.
func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &exeError{fmt.Sprintf("executable %s does not exist", path), err}
	case err != nil:
		return &exeError{fmt.Sprintf("cannot check executable %s: %v", path, err), err}
	case fi.IsDir():
		return &exeError{fmt.Sprintf("executable %s is a directory", path), nil}
	case !fi.Mode().IsRegular():
		return &exeError{fmt.Sprintf("executable %s is not a regular file", path), nil}
	case fi.Mode().Perm()&0o111 == 0:
		return &exeError{fmt.Sprintf("executable %s is not executable (mode %v)", path, fi.Mode().Perm()), nil}
	}
	return nil
}

// exeError is an executable problem: msg for people, err for errors.Is.
type exeError struct {
	msg string
	err error
}

func (e *exeError) Error() string { return e.msg }
func (e *exeError) Unwrap() error { return e.err }
