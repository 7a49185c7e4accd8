// Package boshpath knows where things live under a BOSH root (/var/vcap on a
// stemcell): job configs, logs, pid files, data and store directories, and
// vigil's own runtime files. It is pure: nothing here touches the disk.
package boshpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultRoot is the BOSH root on a stemcell.
const DefaultRoot = "/var/vcap"

// Layout is a BOSH root directory. The zero value is not usable; build one
// with New or Resolve.
type Layout struct {
	root string
}

// New returns the layout rooted at dir, which is made absolute and clean.
func New(dir string) (Layout, error) {
	if dir == "" {
		return Layout{}, errors.New("empty BOSH root")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, fmt.Errorf("resolve BOSH root %q: %w", dir, err)
	}
	return Layout{root: abs}, nil
}

// Resolve picks the root the way every vigil entry point does: the flag value
// if set, else the first non-empty environment variable in envs (looked up
// with getenv), else DefaultRoot.
func Resolve(flag string, getenv func(string) string, envs ...string) (Layout, error) {
	if flag != "" {
		return New(flag)
	}
	for _, e := range envs {
		if v := getenv(e); v != "" {
			return New(v)
		}
	}
	return New(DefaultRoot)
}

// Root is the BOSH root itself.
func (l Layout) Root() string { return l.root }

// JobsDir holds one directory per job.
func (l Layout) JobsDir() string { return filepath.Join(l.root, "jobs") }

// JobDir is ROOT/jobs/JOB.
func (l Layout) JobDir(job string) string { return filepath.Join(l.root, "jobs", job) }

// BPMConfig is ROOT/jobs/JOB/config/bpm.yml.
func (l Layout) BPMConfig(job string) string {
	return filepath.Join(l.root, "jobs", job, "config", "bpm.yml")
}

// JobBinDir is ROOT/jobs/JOB/bin, the first entry of a process's default PATH.
func (l Layout) JobBinDir(job string) string { return filepath.Join(l.root, "jobs", job, "bin") }

// PackagesDir is ROOT/packages.
func (l Layout) PackagesDir() string { return filepath.Join(l.root, "packages") }

// LogDir is ROOT/sys/log/JOB.
func (l Layout) LogDir(job string) string { return filepath.Join(l.root, "sys", "log", job) }

// StdoutLog is ROOT/sys/log/JOB/PROC.stdout.log.
func (l Layout) StdoutLog(job, proc string) string {
	return filepath.Join(l.LogDir(job), proc+".stdout.log")
}

// StderrLog is ROOT/sys/log/JOB/PROC.stderr.log.
func (l Layout) StderrLog(job, proc string) string {
	return filepath.Join(l.LogDir(job), proc+".stderr.log")
}

// PidDir is ROOT/sys/run/bpm/JOB.
func (l Layout) PidDir(job string) string { return filepath.Join(l.root, "sys", "run", "bpm", job) }

// PidFile is ROOT/sys/run/bpm/JOB/PROC.pid, where bpm keeps it.
func (l Layout) PidFile(job, proc string) string {
	return filepath.Join(l.PidDir(job), proc+".pid")
}

// JobRunDir is ROOT/sys/run/JOB (bpm creates it for sockets).
func (l Layout) JobRunDir(job string) string { return filepath.Join(l.root, "sys", "run", job) }

// DataDir is ROOT/data/JOB, the job's ephemeral data directory.
func (l Layout) DataDir(job string) string { return filepath.Join(l.root, "data", job) }

// TmpDir is ROOT/data/JOB/tmp, the process's TMPDIR.
func (l Layout) TmpDir(job string) string { return filepath.Join(l.root, "data", job, "tmp") }

// StoreRoot is ROOT/store, present only where a persistent disk is attached.
func (l Layout) StoreRoot() string { return filepath.Join(l.root, "store") }

// StoreDir is ROOT/store/JOB.
func (l Layout) StoreDir(job string) string { return filepath.Join(l.root, "store", job) }

// AgentSpec is ROOT/bosh/spec.json, where the BOSH agent keeps the apply
// spec of the instance (deployment, instance group, index, id).
func (l Layout) AgentSpec() string { return filepath.Join(l.root, "bosh", "spec.json") }

// VigilRunDir is ROOT/sys/run/vigil, where the daemon keeps its socket.
func (l Layout) VigilRunDir() string { return filepath.Join(l.root, "sys", "run", "vigil") }

// ExitFile is where an init whose daemon has gone records how its
// executable ended, for the one that adopted it and claimed the record
// there: ROOT/sys/run/vigil/exit/JOB/PROC.json.
func (l Layout) ExitFile(job, proc string) string {
	return filepath.Join(l.VigilRunDir(), "exit", job, proc+".json")
}

// InitRecord is where the starter of a process's init records which
// process the init is (pid, start time, executable), for whoever finds the
// init through its pid file later: ROOT/sys/run/vigil/init/JOB/PROC.json,
// in a directory only root writes.
func (l Layout) InitRecord(job, proc string) string {
	return filepath.Join(l.VigilRunDir(), "init", job, proc+".json")
}

// SpareRecords is where the daemon's spare inits' records wait for the
// start that takes them (renamed to InitRecord then):
// ROOT/sys/run/vigil/spares, the daemon's alone.
func (l Layout) SpareRecords() string { return filepath.Join(l.VigilRunDir(), "spares") }

// ControlSocket is the daemon's control API socket.
func (l Layout) ControlSocket() string { return filepath.Join(l.VigilRunDir(), "vigil.sock") }

// VigilLogDir is ROOT/sys/log/vigil, where the daemon writes its own log.
func (l Layout) VigilLogDir() string { return filepath.Join(l.root, "sys", "log", "vigil") }

// Inside is where p, a path at or below the root, is seen inside a
// process's sandbox: the same place below DefaultRoot, where bpm mounts the
// job's directories whatever the root. Other paths come back as they are.
func (l Layout) Inside(p string) string {
	rel, err := filepath.Rel(l.root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(os.PathSeparator)) {
		return p
	}
	return filepath.Join(DefaultRoot, rel)
}

// Contains reports whether p lies strictly below the root.
func (l Layout) Contains(p string) bool {
	rel, err := filepath.Rel(l.root, p)
	return err == nil && rel != "." && !strings.HasPrefix(rel, ".."+string(os.PathSeparator)) && rel != ".."
}

// CheckName reports an error when name cannot be used as a single path
// element: empty, ".", "..", or containing a slash or NUL. Job and process
// names become directory and file names, so they must not escape.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("name %q would escape its directory", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("name %q contains a slash or NUL byte", name)
	}
	return nil
}
