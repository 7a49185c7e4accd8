package container

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/lifecycle"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

func TestBudget(t *testing.T) {
	tests := []struct {
		grace, drain time.Duration
		timing       supervise.Timing
	}{
		{30 * time.Second, 13500 * time.Millisecond, supervise.Timing{StopTimeout: 10 * time.Second, QuitTimeout: 2 * time.Second, KillTimeout: 3 * time.Second}},
		{0, 13500 * time.Millisecond, supervise.Timing{StopTimeout: 10 * time.Second, QuitTimeout: 2 * time.Second, KillTimeout: 3 * time.Second}},
		{2 * time.Minute, 92 * time.Second, supervise.Timing{StopTimeout: 15 * time.Second, QuitTimeout: 2 * time.Second, KillTimeout: 5 * time.Second}},
	}
	for _, tt := range tests {
		drain, timing := Budget(tt.grace)
		if drain != tt.drain || timing.StopTimeout != tt.timing.StopTimeout ||
			timing.QuitTimeout != tt.timing.QuitTimeout || timing.KillTimeout != tt.timing.KillTimeout {
			t.Errorf("grace %v: drain %v timing %+v", tt.grace, drain, timing)
		}
	}
}

func TestStampsWaitForEveryContainer(t *testing.T) {
	dir := t.TempDir()
	a, _ := NewStamps(dir, "a")
	b, _ := NewStamps(dir, "b")
	if _, err := NewStamps(dir, "../x"); err == nil {
		t.Fatal("escaping name accepted")
	}
	a.Register()
	b.Register()
	a.MarkDrained()
	done := make(chan error, 1)
	go func() { done <- a.WaitAll(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("returned before b drained: %v", err)
	default:
	}
	b.MarkDrained()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, _ := NewStamps(dir, "c")
	c.Register()
	cancel()
	if err := a.WaitAll(ctx); err == nil || !strings.Contains(err.Error(), "still draining: c") {
		t.Fatalf("got %v", err)
	}
}

// fakeManager serves a fixed status and records actions.
type fakeManager struct {
	control.Manager
	st   control.Status
	acts []control.ActionRequest
}

func (f *fakeManager) Status(context.Context) (control.Status, error) { return f.st, nil }
func (f *fakeManager) Act(_ context.Context, r control.ActionRequest) ([]control.ProcessStatus, error) {
	f.acts = append(f.acts, r)
	return nil, nil
}

func TestReadyAndDrainAll(t *testing.T) {
	m := &fakeManager{st: control.Status{Processes: []control.ProcessStatus{
		{Job: "a", Process: "x", State: "running", Wanted: "up", Ready: true},
		{Job: "a", Process: "y", State: "stopped", Wanted: "down"},
		{Job: "b", Process: "b", State: "backoff", Wanted: "up"},
		{Job: "b", Process: "c", State: "running", Wanted: "up"},
	}}}
	if err := Ready(context.Background(), m); err == nil || err.Error() != "not ready: b/b is backoff, b/c is not ready" {
		t.Fatalf("ready: %v", err)
	}
	all := m.st.Processes
	m.st.Processes = all[:2]
	if err := Ready(context.Background(), m); err != nil {
		t.Fatalf("ready: %v", err)
	}
	m.st.Daemon.Drain = &control.DrainState{State: control.DrainDone}
	if err := Ready(context.Background(), m); err == nil || err.Error() != "not ready: drained (the pod is terminating)" {
		t.Fatalf("ready after a drain: %v", err)
	}
	m.st.Daemon.Drain = nil
	m.st.Problems = []control.Problem{{Severity: "warning", Job: "a", Message: "a warning"},
		{Severity: "error", Job: "c", File: "/var/vcap/jobs/c/config/bpm.yml", Line: 3, Message: "did not find expected node content"}}
	if err := Ready(context.Background(), m); err == nil || err.Error() != "not ready: c's configuration has errors" {
		t.Fatalf("ready with a job that does not load: %v", err)
	}
	m.st.Processes, m.st.Problems = all, nil
	if err := Live(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "jobs"), 0o755)
	l, _ := boshpath.New(dir)
	if err := DrainAll(context.Background(), m, lifecycle.DrainOptions{Layout: l}); err != nil {
		t.Fatal(err)
	}
	if len(m.acts) != 2 || m.acts[0].Action != "unmonitor" || m.acts[0].Job != "a" || m.acts[1].Job != "b" {
		t.Fatalf("acts %+v", m.acts)
	}
}

// TestContainerAsPID1 runs `vigil container` as PID 1 of a new PID
// namespace: SIGTERM must run the drain while the process still runs, then
// stop it, exit 0 and leave nothing; an orphan that falls to PID 1 is reaped.
func TestContainerAsPID1(t *testing.T) {
	needUnshare(t)
	bin := buildVigil(t)
	root := t.TempDir()
	events := filepath.Join(root, "events")
	job := func(name, body string) {
		p := filepath.Join(root, "jobs", "web", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o755)
	}
	// host_pid_namespace: with a PID namespace of its own, the kernel reaps
	// the executable inside the dying namespace, and no orphan reaches PID 1.
	// The user is one every machine has (a start as a missing vcap fails).
	job("config/bpm.yml", "processes:\n- name: web\n  executable: "+filepath.Join(root, "jobs", "web", "bin", "web")+
		"\n  user: nobody\n  unsafe: {host_pid_namespace: true}\n")
	out := filepath.Join(root, "sys", "log", "web", "web.stdout.log")
	job("bin/web", "#!/bin/sh\ntrap 'echo process got TERM; exit 0' TERM\necho started\nwhile :; do sleep 1000 & wait $!; done\n")
	// The drain leaves an orphan behind: a double fork orphans a child that
	// blocks on a FIFO until its parent is gone (so the parent cannot have
	// reaped it), it falls to PID 1, and the drain finishes only once PID 1
	// has reaped it (kill -0 still finds a zombie).
	orphan, fifo := filepath.Join(root, "orphan"), filepath.Join(root, "orphan.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	job("bin/drain", "#!/bin/sh\nkill -0 $(cat "+filepath.Join(root, "sys", "run", "bpm", "web", "web.pid")+") && ! grep -q TERM "+out+
		" && echo drain with process running $1 >> "+events+"\n( sh -c 'read x < "+fifo+"' & echo $! > "+orphan+" )\n"+
		"echo go > "+fifo+"\nwhile kill -0 $(cat "+orphan+") 2>/dev/null; do :; done\necho 0\n")

	port := freePort(t)
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", bin, "container", "--root", root, "--grace", "20s",
		"--probes", "127.0.0.1:"+port)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killNamespace(t, cmd)
	logs := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs <- sc.Text()
		}
		close(logs)
	}()
	var seen []string
	expect := func(s string) string {
		t.Helper()
		guard := time.After(time.Minute)
		for {
			select {
			case line, ok := <-logs:
				if !ok {
					t.Fatalf("stderr closed before %q; it said:\n%s", s, strings.Join(seen, "\n"))
				}
				seen = append(seen, line)
				if strings.Contains(line, s) {
					return line
				}
			case <-guard:
				t.Fatalf("no %q on stderr", s)
			}
		}
	}
	expect("msg=supervising")
	reaper := childOf(t, cmd.Process.Pid)
	client := control.NewClient(filepath.Join(root, "sys", "run", "vigil", "vigil.sock"))
	st, err := client.Status(context.Background())
	if err != nil || len(st.Processes) != 1 || st.Processes[0].State != "running" {
		t.Fatalf("status %+v %v", st, err)
	}
	for _, path := range []string{"/livez", "/readyz"} {
		resp, err := http.Get("http://127.0.0.1:" + port + path)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	if out, err := exec.Command(bin, "probe", "ready", "--root", root).CombinedOutput(); err != nil || string(out) != "ready\n" {
		t.Fatalf("vigil probe ready: %v %s", err, out)
	}
	testproc.WaitUntil(t, filepath.Dir(out), testproc.FileHolds(out, "started\n"))
	// Kill the init outright: the process comes back.
	if err := syscall.Kill(hostPID(t, reaper, st.Processes[0].PID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	expect("state=running")
	// Running means exec'd: wait until the script has set its trap and said so.
	testproc.WaitUntil(t, filepath.Dir(out), testproc.FileHolds(out, "started\nstarted\n"))
	syscall.Kill(reaper, syscall.SIGTERM)
	// The killed init's orphans were reaped too: wait for the drain's own.
	for {
		line := expect("reaped orphan")
		if pid, _ := os.ReadFile(orphan); len(pid) > 0 && strings.HasSuffix(line, " "+strings.TrimSpace(string(pid))) {
			break
		}
	}
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("container exited with %v", err)
	}
	b, _ := os.ReadFile(events)
	logged, _ := os.ReadFile(out)
	if string(b) != "drain with process running job_shutdown\n" || string(logged) != "started\nstarted\nprocess got TERM\n" {
		t.Fatalf("events:\n%s\nprocess log:\n%s", b, logged)
	}
	if syscall.Kill(reaper, 0) == nil {
		t.Fatal("PID 1 still runs")
	}
}

// TestWaitAll is a pod of two containers: a's preStop (vigil drain
// --wait-all) must wait until b, whose job process has exited, has drained
// too; b drains when it gets SIGTERM.
func TestWaitAll(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root for a new PID namespace (unshare --pid)")
	}
	bin := buildVigil(t)
	stamps := t.TempDir()
	rootA, rootB := t.TempDir(), t.TempDir()
	for _, r := range []string{rootA, rootB} {
		p := filepath.Join(r, "jobs", "j", "bin", "drain")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("#!/bin/sh\necho drained >> "+filepath.Join(r, "drained")+"\necho 0\n"), 0o755)
		os.MkdirAll(filepath.Join(r, "jobs", "j", "config"), 0o755)
		os.WriteFile(filepath.Join(r, "jobs", "j", "config", "bpm.yml"), []byte("processes:\n- name: j\n  executable: /bin/true\n"), 0o644)
	}
	b := exec.Command("unshare", "--pid", "--fork", "--mount-proc", bin, "container", "--root", rootB, "--stamps", stamps, "--name", "b")
	stderr, _ := b.StderrPipe()
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	killNamespace(t, b)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "msg=supervising") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	a := exec.Command(bin, "drain", "--root", rootA, "--wait-all", stamps, "--name", "a")
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	// The moment a's preStop returns, b must have drained already: the
	// stamp is looked at right then, so an early return at any time fails.
	type ended struct {
		err      error
		bDrained bool
	}
	waited := make(chan ended, 1)
	go func() {
		err := a.Wait()
		_, serr := os.Stat(filepath.Join(stamps, "b.drained"))
		waited <- ended{err, serr == nil}
	}()
	// a has drained and now waits for b (inotify on the stamps directory).
	testproc.WaitUntil(t, stamps, func() bool { _, err := os.Stat(filepath.Join(stamps, "a.drained")); return err == nil })
	syscall.Kill(childOf(t, b.Process.Pid), syscall.SIGTERM)
	if e := <-waited; e.err != nil || !e.bDrained {
		t.Fatalf("a's preStop returned (%v) with b drained=%v", e.err, e.bDrained)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("b: %v", err)
	}
	for _, r := range []string{rootA, rootB} {
		if got, _ := os.ReadFile(filepath.Join(r, "drained")); string(got) != "drained\n" {
			t.Fatalf("%s drained %q", r, got)
		}
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// killNamespace makes sure that, however the test ends, the PID namespace
// under unshare goes away: SIGKILL to its PID 1 takes everything in it.
func killNamespace(t *testing.T, unshare *exec.Cmd) {
	t.Cleanup(func() {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(unshare.Process.Pid) + "/task/" +
			strconv.Itoa(unshare.Process.Pid) + "/children"); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, _ := strconv.Atoi(f); pid > 0 {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		unshare.Process.Kill()
		unshare.Wait()
	})
}

// needUnshare skips t unless it can run a container's command as PID 1
// of namespaces of its own (unshare, as root).
func needUnshare(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root for a container's namespaces (unshare)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare from util-linux")
	}
}

// childOf returns the only child of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	f := strings.Fields(string(b))
	if err != nil || len(f) != 1 {
		t.Fatalf("children of %d: %q %v", pid, b, err)
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// hostPID finds the host pid of the process that is nsPID in the PID
// namespace of reaper, from /proc/PID/status's NSpid lines.
func hostPID(t *testing.T, reaper, nsPID int) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(strings.TrimPrefix(line, "NSpid:"))
			if strings.HasPrefix(line, "NSpid:") && len(f) >= 2 && f[1] == strconv.Itoa(nsPID) && below(pid, reaper) {
				return pid
			}
		}
	}
	t.Fatalf("no process %d in the namespace of %d", nsPID, reaper)
	return 0
}

// below reports whether pid descends from ancestor.
func below(pid, ancestor int) bool {
	for pid > 1 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		pid, _ = strconv.Atoi(f[1])
		if pid == ancestor {
			return true
		}
	}
	return false
}

func buildVigil(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vigil")
	build := exec.Command("go", "build", "-o", bin, "github.com/vigil-bosh/vigil/cmd/vigil") // from wherever this package lives
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestDrainerRunsOnce: whatever asks first, the drains run once; a second
// request, or SIGTERM's, waits for the first's outcome and shares it; a
// request that gives up waiting leaves the drains running.
func TestDrainerRunsOnce(t *testing.T) {
	release := make(chan struct{})
	runs := 0
	d := newDrainer(func(ctx context.Context) error {
		runs++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the drains run without their budget")
		}
		<-release
		return errors.New("job web: drain failed")
	}, time.Hour)
	if d.DrainState() != nil {
		t.Fatal("a state before any drain")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if st, err := d.Drain(ctx); err == nil || st.State != control.DrainRunning || st.By != "request" {
		t.Fatalf("an abandoned request: %+v %v", st, err)
	}
	second := make(chan control.DrainState, 1)
	go func() {
		st, _ := d.Drain(context.Background())
		second <- st
	}()
	signal := d.begin("signal") // SIGTERM meanwhile: the drains that run are the ones
	close(release)
	<-signal
	st := <-second
	if runs != 1 || st.State != control.DrainFailed || st.By != "request" || st.Error != "job web: drain failed" || st.Ended == nil ||
		d.err() == nil {
		t.Fatalf("after the drains: runs %d, state %+v", runs, st)
	}
}

// TestDrainOnceWithoutStamps: a single container without --stamps, whose
// preStop hook is vigil drain: the hook's drain is the daemon's, SIGTERM
// then finds it done, and the drain script runs once; status says drained
// and the container is no longer ready.
func TestDrainOnceWithoutStamps(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root for a new PID namespace (unshare --pid)")
	}
	bin := buildVigil(t)
	root := t.TempDir()
	podJob(t, root, "one", false)
	cmd := exec.Command("unshare", "--pid", "--fork", "--mount-proc", bin, "container", "--root", root, "--grace", "20s")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killNamespace(t, cmd)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "msg=supervising") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	testproc.WaitUntil(t, filepath.Join(root, "sys", "log", "job"), testproc.FileHolds(filepath.Join(root, "sys", "log", "job", "job.stdout.log"), "started\n"))
	if out, err := exec.Command(bin, "drain", "--root", root).CombinedOutput(); err != nil || string(out) != "the daemon drained every job (begun by a drain request)\n" {
		t.Fatalf("preStop: %v %q", err, out)
	}
	st, err := control.NewClient(filepath.Join(root, "sys", "run", "vigil", "vigil.sock")).Status(context.Background())
	if err != nil || st.Daemon.Drain == nil || st.Daemon.Drain.State != control.DrainDone || !st.Processes[0].Unmonitored {
		t.Fatalf("status after the drain: %+v %v", st, err)
	}
	if out, err := exec.Command(bin, "probe", "ready", "--root", root).CombinedOutput(); err == nil {
		t.Fatalf("ready after the drain: %q", out)
	}
	syscall.Kill(childOf(t, cmd.Process.Pid), syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("container: %v", err)
	}
	if drains, _ := os.ReadFile(filepath.Join(root, "drains")); string(drains) != "drain job_shutdown hash_unchanged, process running and not signalled\n" {
		t.Fatalf("the drains that ran: %q", drains)
	}
}

// TestProbesAreReadOnly: the probe endpoints answer GET only, and say one
// word when not ready, never which process.
func TestProbesAreReadOnly(t *testing.T) {
	m := &fakeManager{st: control.Status{Processes: []control.ProcessStatus{{Job: "secret-job", Process: "p", State: "backoff", Wanted: "up"}}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := serveProbes(ctx, ln, m, nil)
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || string(body) != "not ready\n" {
		t.Fatalf("/readyz: %d %q", resp.StatusCode, body)
	}
	resp, err = http.Post(base+"/livez", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /livez: %d", resp.StatusCode)
	}
}

// TestDaemonThatCannotRunEndsRun: when the daemon cannot run at all (here
// its socket's directory cannot be made), Run returns its error with the
// probe listener open, instead of serving "ready" forever with nothing
// running (seen under the kubelet with a read-only root filesystem).
func TestDaemonThatCannotRunEndsRun(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "jobs"), 0o755)
	os.WriteFile(filepath.Join(dir, "sys"), []byte("not a directory"), 0o644)
	l, _ := boshpath.New(dir)
	ended := make(chan error, 1)
	go func() {
		ended <- Run(context.Background(), Config{Daemon: daemon.Config{Layout: l}, Probes: "127.0.0.1:0", Grace: time.Second})
	}()
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(testproc.Guard):
		t.Fatal("Run still serves its probes with no daemon running")
	}
}
