// Package job turns a BOSH job's bpm.yml into a validated, immutable model,
// reading the file exactly as bpm (cloudfoundry/bpm-release) does and adding
// a few checks of its own. Every error and warning names the file, the line
// and the field it is about.
package job

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Job is one BOSH job's validated configuration. Never modified after Load.
type Job struct {
	Name       string    // directory name under ROOT/jobs
	ConfigPath string    // ROOT/jobs/NAME/config/bpm.yml
	Errand     bool      // ROOT/jobs/NAME/bin/run exists (errands are only started by `bpm run`)
	Processes  []Process // in file order
}

// Process returns the process called name. Names are unique in a valid job.
func (j *Job) Process(name string) (Process, bool) {
	for _, p := range j.Processes {
		if p.Name == name {
			return p, true
		}
	}
	return Process{}, false
}

// Process is one entry of bpm.yml's processes list, with defaults applied.
type Process struct {
	Job, Name string
	// Executable is as written. ResolvedExecutable is the absolute path to
	// exec: Parse fills it when no PATH lookup is needed (an absolute path, or
	// a relative one containing a slash, taken from Workdir); Load always does.
	Executable         string
	ResolvedExecutable string
	Args               []string
	Env                map[string]string // as written in bpm.yml (no defaults); see Environ
	Workdir            string            // default ROOT/jobs/JOB
	Hooks              Hooks
	Capabilities       []string // names as written, without CAP_
	Limits             Limits
	EphemeralDisk      bool
	PersistentDisk     bool
	AdditionalVolumes  []Volume
	Unsafe             Unsafe
	ShutdownSignal     syscall.Signal // SIGTERM (default) or SIGINT
	// User is vigil's `user: NAME[:GROUP]` key (bpm has none and always uses
	// vcap): the identity the executable runs as; "" means vcap.
	User string
	// Health, Restart and DependsOn are vigil's own keys (bpm ignores them):
	// probes, the restart policy, and the processes to wait for.
	Health    Health
	Restart   RestartSpec
	DependsOn []Dependency
	// Logs is vigil's `logs` key (bpm ignores it): log rotation by size.
	Logs LogRotation
	// Isolation is vigil's `isolation` key (bpm ignores it): "" for bpm's
	// sandbox (the key's "sandbox", its default), IsolationHost for the
	// host's namespaces. Left out of the JSON when empty (see
	// Limits.CPUSetMems).
	Isolation string `json:",omitempty"`
	Source    Source

	at *origin // where the process was parsed; nil for a Process built by hand
}

// origin locates a parsed process in its file, for messages. It is shared by
// the processes of a job and never modified.
type origin struct {
	index int            // position in processes
	lines map[string]int // field path → line
}

// Hooks are commands bpm runs on the host around the process.
type Hooks struct {
	PreStart string // absolute path, run before the process starts; "" for none
}

// Limits are the optional resource limits; nil means not set.
type Limits struct {
	Memory       *uint64 // bytes
	OpenFiles    *uint64 // RLIMIT_NOFILE, soft = hard
	Processes    *int64  // pids cgroup limit
	CoreFileSize *uint64 // RLIMIT_CORE, soft = hard

	// vigil's own keys (bpm has no CPU limits):
	CPUWeight *uint64 // relative CPU share, 1..10000 (cgroup v2 cpu.weight; 100 is the default)
	CPUQuota  *uint64 // CPU time as a percentage of one CPU, e.g. 150 for one and a half CPUs
	CPUSet    string  // CPUs the process may run on, e.g. "0-1,4"; "" for all
	// CPUSetMems are the memory nodes it may allocate on, in the same
	// syntax; "" for all. Left out of the JSON when empty, so that the
	// digest of a process without it (systemd's units) is what it was
	// before the key existed.
	CPUSetMems string `json:",omitempty"`
}

// Volume is an additional_volumes or unrestricted_volumes entry.
type Volume struct {
	Path            string
	Writable        bool
	AllowExecutions bool
	MountOnly       bool
	Shared          bool
}

// Unsafe holds the options that weaken isolation.
type Unsafe struct {
	Privileged          bool
	UnrestrictedVolumes []Volume // paths may be globs; only checked to be absolute
	HostPIDNamespace    bool
}

// Source is where a process's list entry starts in its bpm.yml.
type Source struct {
	File string
	Line int
}

// Equal reports whether p and q would be started identically. Source is
// ignored, and a nil slice or map equals an empty one.
func (p Process) Equal(q Process) bool {
	return p.Job == q.Job && p.Name == q.Name &&
		p.Executable == q.Executable && p.ResolvedExecutable == q.ResolvedExecutable &&
		slices.Equal(p.Args, q.Args) && maps.Equal(p.Env, q.Env) &&
		p.Workdir == q.Workdir && p.Hooks == q.Hooks &&
		slices.Equal(p.Capabilities, q.Capabilities) && p.Limits.equal(q.Limits) &&
		p.EphemeralDisk == q.EphemeralDisk && p.PersistentDisk == q.PersistentDisk &&
		slices.Equal(p.AdditionalVolumes, q.AdditionalVolumes) &&
		p.Unsafe.Privileged == q.Unsafe.Privileged &&
		slices.Equal(p.Unsafe.UnrestrictedVolumes, q.Unsafe.UnrestrictedVolumes) &&
		p.Unsafe.HostPIDNamespace == q.Unsafe.HostPIDNamespace &&
		p.ShutdownSignal == q.ShutdownSignal && p.User == q.User &&
		p.Health.equal(q.Health) && p.Restart.equal(q.Restart) && slices.Equal(p.DependsOn, q.DependsOn) &&
		p.Logs == q.Logs && p.Isolation == q.Isolation
}

func (l Limits) equal(m Limits) bool {
	return ptrEqual(l.Memory, m.Memory) && ptrEqual(l.OpenFiles, m.OpenFiles) &&
		ptrEqual(l.Processes, m.Processes) && ptrEqual(l.CoreFileSize, m.CoreFileSize) &&
		ptrEqual(l.CPUWeight, m.CPUWeight) && ptrEqual(l.CPUQuota, m.CPUQuota) && l.CPUSet == m.CPUSet &&
		l.CPUSetMems == m.CPUSetMems
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Warning is a problem that does not stop the job from running.
type Warning struct {
	File  string
	Line  int // 0 when unknown
	Field string
	Msg   string
}

// String formats the warning as "FILE:LINE: FIELD: MSG".
func (w Warning) String() string { return position(w.File, w.Line, w.Field, w.Msg) }

// ConfigError is one problem in a bpm.yml. Msg carries bpm's exact text where
// bpm has one.
type ConfigError struct {
	File  string
	Line  int    // 0 when unknown (e.g. values from `bpm run` flags)
	Field string // e.g. processes[1].additional_volumes[2].path; "" for the whole file
	Msg   string
	Err   error // underlying cause, if any
}

// Error formats the error as "FILE:LINE: FIELD: MSG", leaving out a zero
// line and an empty field.
func (e *ConfigError) Error() string { return position(e.File, e.Line, e.Field, e.Msg) }

// Unwrap returns the underlying cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrorList is every problem found in one file, ordered by line.
type ErrorList []*ConfigError

// Error joins the errors with newlines.
func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap lets errors.Is and errors.As look at each error.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

func position(file string, line int, field, msg string) string {
	var parts []string
	switch {
	case file != "" && line > 0:
		parts = append(parts, file+":"+strconv.Itoa(line))
	case file != "":
		parts = append(parts, file)
	case line > 0:
		parts = append(parts, "line "+strconv.Itoa(line))
	}
	if field != "" {
		parts = append(parts, field)
	}
	return strings.Join(append(parts, msg), ": ")
}
