package launch

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/sandbox"
	"github.com/vigil-bosh/vigil/internal/sandbox/setup"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/job"
)

// sandboxed is a fixture for isolated processes. Its BOSH root lives
// outside /tmp (testproc.SandboxRoot: the process's /tmp is its own); the test binary is
// copied into the root's packages so the process can exec it, and reports
// over an abstract socket, which every mount namespace sees.
type sandboxed struct {
	t      *testing.T
	layout boshpath.Layout
	rep    *testproc.Listener
	bin    string // the test binary inside the root
	init   string // the init's program: the test binary, unless set
	scopes Placer // Options.Scopes
	user   string
	uid    int
}

// testUser is vcap when the machine has it, else nobody: tests create
// nothing in /etc (launch.Options.User is the documented override).
func testUser(t *testing.T) (string, int) {
	for _, name := range []string{"vcap", "nobody"} {
		if u, err := user.Lookup(name); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			return name, uid
		}
	}
	t.Skip("no vcap or nobody user")
	return "", 0
}

func newSandboxed(t *testing.T) *sandboxed {
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root")
	}
	root := testproc.SandboxRoot(t, "vigil-sandbox-")
	l, err := boshpath.New(root)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(l.PackagesDir(), "testproc", "bin", "testproc")
	copyFile(t, bin)
	for _, d := range []string{l.JobDir("job"), l.JobDir("other")} {
		if err := os.MkdirAll(filepath.Join(d, "config"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	name, uid := testUser(t)
	return &sandboxed{t: t, layout: l, rep: testproc.ListenAbstract(t), bin: bin, user: name, uid: uid}
}

func copyFile(t *testing.T, dst string) {
	self, _ := os.Executable()
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}

func (s *sandboxed) process(name, behaviour string, extra ...string) job.Process {
	return job.Process{
		Job: "job", Name: name, Executable: s.bin, ResolvedExecutable: s.bin,
		Env: s.rep.Env(behaviour, extra...), Workdir: s.layout.JobDir("job"), ShutdownSignal: syscall.SIGTERM,
	}
}

func (s *sandboxed) start(p job.Process) (*Runner, supervise.Process) {
	s.t.Helper()
	init := s.init
	if init == "" {
		init, _ = os.Executable()
	}
	r := NewRunner(p, Options{Layout: s.layout, Init: init, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay},
		User: s.user, Scopes: s.scopes})
	pr, err := r.Start(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		_ = pr.ForceKill()
		for range pr.Events() {
		}
	})
	return r, pr
}

// see collects an inspect child's "see KEY VALUE" reports up to "inspected".
func (s *sandboxed) see(pr supervise.Process) map[string]string {
	s.t.Helper()
	if pr != nil {
		if ev := next(s.t, pr); !ev.Running {
			s.t.Fatalf("not running: %v", ev.Exit)
		}
	}
	out := map[string]string{}
	for {
		ln := s.rep.Expect(s.t, "")
		if ln.Text == "inspected" {
			return out
		}
		if rest, ok := strings.CutPrefix(ln.Text, "see "); ok {
			k, v, _ := strings.Cut(rest, " ")
			if k == "write" || k == "list" {
				path, res, _ := strings.Cut(v, " ")
				k, v = k+" "+path, res
			}
			out[k] = v
		}
	}
}

func (s *sandboxed) exitOf(pr supervise.Process) supervise.Exit {
	s.t.Helper()
	for {
		ev := next(s.t, pr)
		if !ev.Running {
			return ev.Exit
		}
	}
}

// TestSandboxEnvironment runs the process under either init: the test
// binary (vigil itself as the init) and the embedded vigil-init, which
// re-executes itself from memory as the sandbox helper.
func TestSandboxEnvironment(t *testing.T) {
	t.Run("vigil", func(t *testing.T) { testSandboxEnvironment(t, "") })
	t.Run("vigil-init", func(t *testing.T) { testSandboxEnvironment(t, embeddedInit(t)) })
}

func testSandboxEnvironment(t *testing.T, init string) {
	s := newSandboxed(t)
	s.init = init
	l := s.layout
	p := s.process("env", "inspect",
		testproc.EnvWrite+"="+strings.Join([]string{"/etc/vigil-test", l.JobDir("job") + "/x",
			l.DataDir("job") + "/x", "/tmp/x", "/var/tmp/y", l.LogDir("job") + "/x"}, ","),
		testproc.EnvList+"="+strings.Join([]string{l.JobsDir(), l.Root() + "/data"}, ","),
		testproc.EnvHold+"=1") // stays up, so its pid file is there to check
	p.EphemeralDisk = true
	core := uint64(4096)
	p.Limits.CoreFileSize = &core
	_, pr := s.start(p)
	ev := next(t, pr)
	if !ev.Running {
		t.Fatalf("not running: %+v", ev)
	}
	see := s.see(nil)
	want := map[string]string{
		"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000",
		"CapAmb": "0000000000000000", "CapInh": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2",
		"core": "4096 4096", "groups": "0",
		"write /etc/vigil-test": "EROFS", "write " + l.JobDir("job") + "/x": "EROFS",
		"write " + l.DataDir("job") + "/x": "ok", "write /tmp/x": "ok", "write /var/tmp/y": "ok",
		"write " + l.LogDir("job") + "/x": "ok",
		"list " + l.JobsDir():             "job", "unshare": "EPERM", "clone3": "ENOSYS",
	}
	for k, v := range want {
		if see[k] != v {
			t.Errorf("%s: got %q, want %q", k, see[k], v)
		}
	}
	// Without CAP_SYS_RESOURCE (some containers), vigil cannot raise
	// RLIMIT_NOFILE to bpm's default, and says so.
	var own syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &own)
	nofile := uint64(setup.DefaultOpenFiles)
	if !sandbox.HasCapability(24) {
		nofile = own.Max
		if !strings.Contains(strings.Join(ev.Warnings, "\n"), "open files limit") {
			t.Errorf("no warning about the open files limit in %q", ev.Warnings)
		}
	}
	if want := fmt.Sprintf("%d %d", nofile, nofile); see["nofile"] != want {
		t.Errorf("nofile: got %q, want %q", see["nofile"], want)
	}
	ids := strings.Fields(see["ids"])
	if len(ids) != 4 || ids[0] != strconv.Itoa(s.uid) || ids[2] == "1" || ids[3] != "1" {
		t.Errorf("ids (uid gid pid ppid) %v: want uid %d, the executable not PID 1, its parent PID 1", ids, s.uid)
	}
	// /tmp is the job's tmp directory on the host.
	if _, err := os.Stat(filepath.Join(l.TmpDir("job"), "x")); err != nil {
		t.Errorf("/tmp/x not in the job's tmp dir: %v", err)
	}
	// The pid file holds the init's host pid, and the executable is its
	// child as the host sees it.
	if got, err := pidfile.Read(l.PidFile("job", "env")); err != nil || got != pr.PID() {
		t.Errorf("pid file holds %d (%v), want %d", got, err, pr.PID())
	}
	if ev.ExecPID == 0 {
		t.Error("no executable pid")
	} else if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", ev.ExecPID)); err == nil &&
		!strings.Contains(string(status), fmt.Sprintf("PPid:\t%d\n", pr.PID())) {
		t.Errorf("executable %d is not the init's child on the host", ev.ExecPID)
	}
	s.rep.Expect(t, "ready") // its TERM handler is in place
	pr.Signal(syscall.SIGTERM)
	if e := s.exitOf(pr); !e.Success() {
		t.Fatalf("exit %v", e)
	}
}

func TestSandboxCapabilities(t *testing.T) {
	s := newSandboxed(t)
	p := s.process("caps", "inspect")
	p.Capabilities = []string{"NET_BIND_SERVICE"}
	_, pr := s.start(p)
	see := s.see(pr)
	for _, k := range []string{"CapEff", "CapPrm", "CapInh", "CapBnd", "CapAmb"} {
		if see[k] != "0000000000000400" {
			t.Errorf("%s: got %q, want only NET_BIND_SERVICE", k, see[k])
		}
	}
	s.exitOf(pr)
}

func TestSandboxPrivileged(t *testing.T) {
	s := newSandboxed(t)
	p := s.process("priv", "inspect")
	p.Unsafe.Privileged = true
	_, pr := s.start(p)
	see := s.see(pr)
	// Every capability up to AUDIT_READ that vigil itself holds.
	var full uint64
	for c := range 38 {
		if sandbox.HasCapability(c) {
			full |= 1 << c
		}
	}
	want := map[string]string{"CapEff": fmt.Sprintf("%016x", full), "CapBnd": fmt.Sprintf("%016x", full),
		"Seccomp": "0", "NoNewPrivs": "0", "unshare": "ok"}
	for k, v := range want {
		if see[k] != v {
			t.Errorf("%s: got %q, want %q", k, see[k], v)
		}
	}
	if ids := strings.Fields(see["ids"]); len(ids) < 1 || ids[0] != "0" {
		t.Errorf("ids %v: want root", ids)
	}
	s.exitOf(pr)
}

func TestSandboxHostPIDNamespace(t *testing.T) {
	s := newSandboxed(t)
	p := s.process("hostpid", "inspect")
	p.Unsafe.HostPIDNamespace = true
	_, pr := s.start(p)
	ev := next(t, pr)
	if !ev.Running {
		t.Fatalf("not running: %v", ev.Exit)
	}
	see := s.see(nil)
	ids := strings.Fields(see["ids"])
	if len(ids) != 4 || ids[2] != strconv.Itoa(ev.ExecPID) || ids[3] != strconv.Itoa(pr.PID()) {
		t.Errorf("ids %v: want the host's pids %d (parent %d)", ids, ev.ExecPID, pr.PID())
	}
	s.exitOf(pr)
}

// TestSandboxRestartGetsItsOwnCgroup: a restart starts while the previous
// instance's init may still be ending, and that init's cleanup (kill all in
// its cgroup, remove the cgroup) must never reach the new instance.
func TestSandboxRestartGetsItsOwnCgroup(t *testing.T) {
	s := newSandboxed(t)
	self, _ := os.Executable()
	r := NewRunner(s.process("again", "serve"), Options{Layout: s.layout, Init: self,
		InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, User: s.user})
	first, err := r.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.rep.Expect(t, "ready")
	next(t, first)
	first.Signal(syscall.SIGTERM)
	ev := next(t, first)
	second, err := r.Start(context.Background()) // at once, as a restart does
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = second.ForceKill()
		for range second.Events() {
		}
	})
	if ev := next(t, second); !ev.Running {
		t.Fatalf("second instance: %v", ev.Exit)
	}
	s.rep.Expect(t, "ready")
	<-ev.Reaped // the first instance's cleanup is done
	select {
	case ev := <-second.Events():
		t.Fatalf("the first instance's cleanup reached the second: %+v", ev)
	default:
	}
	second.Signal(syscall.SIGUSR1)
	s.rep.Expect(t, "signal USR1")
}

// TestSandboxSeesVarVcap: whatever the root, the process finds its job's
// directories below /var/vcap, as under bpm (which mounts the root there),
// with bpm's environment and working directory naming them; under a root
// other than /var/vcap they are at the root's own paths too.
func TestSandboxSeesVarVcap(t *testing.T) {
	s := newSandboxed(t)
	l := s.layout
	p := s.process("vv", "inspect",
		testproc.EnvWrite+"="+strings.Join([]string{"/var/vcap/sys/log/job/x", "/var/vcap/data/job/x", "/var/vcap/store/job/x",
			"/var/vcap/data/job/tmp/x", "/var/vcap/jobs/job/x", l.LogDir("job") + "/y"}, ","),
		testproc.EnvList+"="+strings.Join([]string{"/var/vcap/jobs", "/var/vcap/packages/testproc"}, ","))
	p.EphemeralDisk, p.PersistentDisk = true, true
	if err := os.MkdirAll(l.StoreRoot(), 0o755); err != nil {
		t.Fatal(err)
	}
	_, pr := s.start(p)
	see := s.see(pr)
	want := map[string]string{
		"write /var/vcap/sys/log/job/x": "ok", "write /var/vcap/data/job/x": "ok", "write /var/vcap/store/job/x": "ok",
		"write /var/vcap/data/job/tmp/x": "ok", "write /var/vcap/jobs/job/x": "EROFS", "write " + l.LogDir("job") + "/y": "ok",
		"list /var/vcap/jobs": "job", "list /var/vcap/packages/testproc": "bin",
		"cwd": "/var/vcap/jobs/job",
		"env": "/var/vcap/data/job/tmp /var/vcap/data/job /var/vcap/jobs/job/bin:/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.",
	}
	for k, v := range want {
		if see[k] != v {
			t.Errorf("%s: got %q, want %q", k, see[k], v)
		}
	}
	for _, f := range []string{filepath.Join(l.LogDir("job"), "x"), filepath.Join(l.StoreDir("job"), "x")} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("written at /var/vcap, not found on the host: %v", err)
		}
	}
}

// TestSandboxNamesAMissingExecutable: an executable that exists on the host
// but not inside the sandbox fails the start with a message that says so,
// once, instead of "exec X: exec X: no such file or directory".
func TestSandboxNamesAMissingExecutable(t *testing.T) {
	s := newSandboxed(t)
	outside, err := os.MkdirTemp("/run", "vigil-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	exe := filepath.Join(outside, "bin", "server")
	copyFile(t, exe)
	p := s.process("missing", "serve")
	p.Executable, p.ResolvedExecutable = exe, exe
	_, pr := s.start(p)
	e := s.exitOf(pr)
	want := "exec " + exe + ": no such file or directory inside the process's sandbox, though " + exe + " exists on the host"
	if !strings.HasPrefix(e.Err, want) || strings.Count(e.Err, "exec ") != 1 {
		t.Fatalf("exit %+v, want an error starting %q", e, want)
	}
}
