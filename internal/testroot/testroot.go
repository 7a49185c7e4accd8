// Package testroot is the one BOSH-root fixture of vigil's tests: a root
// in a short temporary directory (a control socket's path must fit in a
// sockaddr), removed when the test ends, whose jobs run the test binary
// itself as testproc's child programs, reporting to a Listener.
package testroot

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// Root is a throwaway BOSH root.
type Root struct {
	t      testing.TB
	Layout boshpath.Layout
	Rep    *testproc.Listener // where the jobs' processes report
	Self   string             // the test binary, which every Proc runs
}

// New makes a root in a new directory under parent ("" means the
// system's temporary directory), removed at the end of the test after the
// cleanups registered later (those that stop what runs there).
func New(t testing.TB, parent string) *Root {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "vt")
	if err != nil {
		t.Fatal(err)
	}
	l, err := boshpath.New(dir)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		killInitsLeft(l.Root())
		os.RemoveAll(dir)
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Root{t: t, Layout: l, Rep: testproc.Listen(t), Self: self}
}

// killInitsLeft kills, with their executables, the inits that the root's
// pid files still name once every daemon of the test has ended: a daemon
// in VM mode (or with monit's control files, as monit) leaves its
// processes running on purpose, and they must not outlive the test. A pid
// file whose process is not an init (its pid reused) is left alone.
func killInitsLeft(root string) {
	files, _ := filepath.Glob(filepath.Join(root, "sys", "run", "bpm", "*", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if args := strings.Split(string(cmdline), "\x00"); len(args) < 2 || filepath.Base(args[0]) != "vigil-init" || args[1] != "init" {
			continue
		}
		// The executable dies with its init (its parent-death signal).
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Proc is one process of a job that runs the test binary.
type Proc struct {
	Name      string
	Behaviour string   // testproc's behaviour, e.g. "serve"
	Env       []string // more KEY=VALUE for the behaviour
	Args      []string
	// YAML is more of the process's entry, each line indented by two
	// spaces (health:, hooks:, restart: ...).
	YAML string
}

// Job writes ROOT/jobs/NAME/config/bpm.yml with procs.
func (r *Root) Job(name string, procs ...Proc) {
	r.t.Helper()
	var b strings.Builder
	b.WriteString("processes:\n")
	for _, p := range procs {
		fmt.Fprintf(&b, "- name: %s\n  executable: %s\n", p.Name, r.Self)
		if len(p.Args) > 0 {
			fmt.Fprintf(&b, "  args: [%s]\n", quoted(p.Args))
		}
		b.WriteString("  env:\n")
		for k, v := range r.Rep.Env(p.Behaviour, p.Env...) {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
		b.WriteString(p.YAML)
	}
	r.Config(name, b.String())
}

func quoted(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, ", ")
}

// Config writes ROOT/jobs/JOB/config/bpm.yml as given.
func (r *Root) Config(job, yml string) {
	r.t.Helper()
	r.Write(r.Layout.BPMConfig(job), yml, 0o644)
}

// Write writes path with its directories, failing the test on error.
func (r *Root) Write(path, content string, mode os.FileMode) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		r.t.Fatal(err)
	}
}
