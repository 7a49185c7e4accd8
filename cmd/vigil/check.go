package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/job"
)

// checkReport is what vigil check found, as --json prints it.
type checkReport struct {
	Files    []string          `json:"files"` // what was read: the root, or each file
	Problems []control.Problem `json:"problems"`
	Errors   int               `json:"errors"`
	Warnings int               `json:"warnings"`
	// WouldStart, for a whole root, is what a daemon would start.
	WouldStart []string `json:"would_start,omitempty"`
}

func defineCheck(c *command) func([]string) error {
	asJSON := c.Bool("json", "print the problems as JSON")
	strict := c.Bool("strict", "warnings fail the check too")
	exes := c.Bool("executables", "with PATHs: check that each executable exists here (it names a path of the target machine)")
	jobName := c.String("job", "", "the job `NAME` a bpm.yml PATH belongs to (default: from its path, JOB/config/bpm.yml)")
	return func(pos []string) error {
		l, err := c.layout()
		if err != nil {
			return err
		}
		var rep checkReport
		if len(pos) == 0 {
			if err := checkRoot(l.Root()); err != nil {
				return err
			}
			res, err := daemon.Check(daemon.Config{Layout: l, NoIsolation: true})
			if err != nil {
				return err
			}
			rep.Files, rep.Problems, rep.WouldStart = []string{l.Root()}, res.Problems, res.Started
		}
		for _, path := range pos {
			files, probs := checkPath(l, path, *jobName, *exes)
			rep.Files = append(rep.Files, files...)
			rep.Problems = append(rep.Problems, probs...)
		}
		for _, p := range rep.Problems {
			if p.Severity == "error" {
				rep.Errors++
			} else {
				rep.Warnings++
			}
		}
		if rep.Problems == nil {
			rep.Problems = []control.Problem{}
		}
		if *asJSON {
			if err := writeJSON(os.Stdout, rep); err != nil {
				return err
			}
		} else {
			writeCheck(os.Stdout, rep)
		}
		if rep.Errors > 0 || (*strict && rep.Warnings > 0) {
			return &exitError{code: exitFailed}
		}
		return nil
	}
}

func writeCheck(w io.Writer, rep checkReport) {
	for _, p := range rep.Problems {
		fmt.Fprintln(w, problemLine(p))
	}
	fmt.Fprintf(w, "%s: %d error(s), %d warning(s)", strings.Join(rep.Files, ", "), rep.Errors, rep.Warnings)
	if len(rep.WouldStart) > 0 {
		fmt.Fprintf(w, "; a daemon would start %d process(es)", len(rep.WouldStart))
	}
	fmt.Fprintln(w)
}

// checkPath checks one PATH of vigil check: a job directory, a monit
// control file or a bpm.yml, validated as the daemon validates them. It
// returns the files it read and their problems.
func checkPath(l boshpath.Layout, path, name string, executables bool) ([]string, []control.Problem) {
	fi, err := os.Stat(path)
	if err != nil {
		return []string{path}, []control.Problem{{Severity: "error", File: path, Message: "cannot read: " + errors.Unwrap(err).Error()}}
	}
	if !fi.IsDir() {
		if isMonitFile(path) {
			return []string{path}, checkMonit(l, path, nil)
		}
		if name == "" {
			name = jobOfPath(path)
		}
		_, probs := checkBPM(l, path, name, executables)
		return []string{path}, probs
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(path))
	}
	var files []string
	var probs []control.Problem
	var defined []string
	if bpm := filepath.Join(path, "config", "bpm.yml"); exists(bpm) {
		j, p := checkBPM(l, bpm, name, executables)
		files, probs = append(files, bpm), append(probs, p...)
		if j != nil {
			for _, p := range j.Processes {
				defined = append(defined, p.Name)
			}
		}
	}
	monits, _ := filepath.Glob(filepath.Join(path, "*.monit"))
	if own := filepath.Join(path, "monit"); exists(own) {
		monits = append([]string{own}, monits...)
	}
	for _, m := range monits {
		files, probs = append(files, m), append(probs, checkMonit(l, m, defined)...)
	}
	if len(files) == 0 {
		return []string{path}, []control.Problem{{Severity: "error", File: path,
			Message: "neither config/bpm.yml nor a monit file: not a job directory"}}
	}
	return files, probs
}

// checkBPM validates one bpm.yml as the daemon does (job.Check), its
// executables only when asked.
func checkBPM(l boshpath.Layout, path, name string, executables bool) (*job.Job, []control.Problem) {
	if strings.HasSuffix(path, ".erb") {
		return nil, []control.Problem{{Severity: "error", File: path, Message: "an ERB template: render it first (vigil checks the bpm.yml the director writes)"}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, []control.Problem{{Severity: "error", File: path, Message: "cannot read: " + errors.Unwrap(err).Error()}}
	}
	j, warns, err := job.Check(l, name, path, data, executables)
	var errs []error
	if err != nil {
		errs = []error{&job.LoadError{Job: name, Err: err}}
	}
	return j, backend.Problems(errs, warns)
}

// checkMonit validates a monit control file as the daemon reads it; with
// defined (the processes of the job's bpm.yml), each check that starts a
// process through the bpm shim must name one of them.
func checkMonit(l boshpath.Layout, path string, defined []string) []control.Problem {
	cfg, err := monitrc.LoadFile(path, l.Root())
	if err != nil {
		return []control.Problem{{Severity: "error", File: path, Message: err.Error()}}
	}
	var probs []control.Problem
	for _, p := range cfg.Problems {
		probs = append(probs, control.Problem{Severity: "error", File: p.File, Line: p.Line, Message: p.Msg})
	}
	if defined == nil {
		return probs
	}
	for _, s := range cfg.Services {
		if id, ok := monit.BPMShim(l, s.Start); ok && !slices.Contains(defined, id.Process) {
			probs = append(probs, control.Problem{Severity: "error", File: s.File, Line: s.Line,
				Message: fmt.Sprintf("service %s starts bpm process %s, which the job's bpm.yml does not define", s.Name, id)})
		}
	}
	return probs
}

// isMonitFile reports whether path names a monit control file: monit,
// *.monit, *.monitrc, monitrc.
func isMonitFile(path string) bool {
	base := filepath.Base(path)
	return base == "monit" || base == "monitrc" || strings.HasSuffix(base, ".monit") || strings.HasSuffix(base, ".monitrc")
}

// jobOfPath names the job of a bpm.yml at .../JOB/config/bpm.yml, else
// the directory it is in.
func jobOfPath(path string) string {
	dir := filepath.Dir(filepath.Clean(path))
	if filepath.Base(dir) == "config" {
		return filepath.Base(filepath.Dir(dir))
	}
	return filepath.Base(dir)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
