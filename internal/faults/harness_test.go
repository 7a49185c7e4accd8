package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

// The environment of the test binary re-executed as a daemon.
const (
	envDaemon  = "VIGIL_FAULTS_DAEMON"  // the BOSH root to supervise
	envStop    = "VIGIL_FAULTS_STOP"    // each stage of the stop ladder (a duration)
	envBackoff = "VIGIL_FAULTS_BACKOFF" // the first restart delay after a quick exit
)

func TestMain(m *testing.M) {
	testproc.Main()
	if root := os.Getenv(envDaemon); root != "" {
		os.Exit(runDaemon(root))
	}
	// The inits a killed daemon leaves are re-parented to the test, not to
	// pid 1 (which need not reap here): the tests see them and reap them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "faults: become a subreaper:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// runDaemon is the daemon process: vigil's daemon on root, without
// isolation (the roots live under /tmp), logging to stderr, ending on
// SIGTERM and reopening logs on SIGHUP, as `vigil daemon` does.
func runDaemon(root string) int {
	l, err := boshpath.New(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	self, _ := os.Executable()
	stage, _ := time.ParseDuration(os.Getenv(envStop))
	backoff, _ := time.ParseDuration(os.Getenv(envBackoff))
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	d, err := daemon.New(daemon.Config{Layout: l, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay},
		Timing: supervise.Timing{StopTimeout: stage, QuitTimeout: stage, KillTimeout: stage,
			Restart: restart.Policy{Initial: backoff, Max: 4 * backoff}},
		NoIsolation: true, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), unix.SIGTERM, unix.SIGINT)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, unix.SIGHUP)
	reopener := make(chan struct{})
	go func() {
		defer close(reopener)
		for range hup {
			if err := d.ReopenLogs(ctx); err != nil {
				log.Error("reopen logs", "error", err)
			} else {
				log.Info("reopened logs")
			}
		}
	}()
	defer func() { signal.Stop(hup); close(hup); <-reopener }() // no reopen after Run
	if err := d.Run(ctx); err != nil {
		log.Error("run", "error", err)
		return 1
	}
	return 0
}

// rig is one BOSH root under /tmp, the daemons started on it, and the
// listener its test processes report to. Every executable it configures
// carries the argument MARK/JOB/PROC, so the live instances of a process
// can be counted from /proc.
type rig struct {
	t      *testing.T
	root   *testroot.Root
	layout boshpath.Layout
	rep    *testproc.Listener
	mark   string
	self   string
	gate   string // the file that releases every "gate" hook
	daemon *daemonProc
	owned  map[int]bool // children of the test that it waits for itself
}

// daemonProc is one daemon process and its log lines.
type daemonProc struct {
	cmd  *exec.Cmd
	logs chan string // every line after start, dropped when nobody reads
	done chan struct{}
	file string // every line, kept
}

func newRig(t *testing.T) *rig {
	root := testroot.New(t, "")
	l := root.Layout
	r := &rig{t: t, root: root, layout: l, rep: root.Rep, self: root.Self, gate: filepath.Join(l.Root(), "gate", "open"),
		mark: fmt.Sprintf("vigil-fault-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-")), owned: map[int]bool{}}
	os.MkdirAll(filepath.Dir(r.gate), 0o755)
	t.Cleanup(func() { // before the root goes
		if r.daemon != nil {
			r.stopDaemon()
		}
		r.killLeftovers()
	})
	return r
}

// tp is one process of a job: a testproc behaviour with extra environment
// and, if hook is set, a pre_start hook that runs the "gate" behaviour.
type tp struct {
	name, behaviour string
	env             []string
	hook            bool
}

// job writes ROOT/jobs/NAME/config/bpm.yml with procs.
func (r *rig) job(name string, procs ...tp) {
	r.t.Helper()
	tps := make([]testroot.Proc, len(procs))
	for i, p := range procs {
		tps[i] = testroot.Proc{Name: p.name, Behaviour: p.behaviour, Env: append(p.env, testproc.EnvGate+"="+r.gate),
			Args: []string{r.mark + "/" + name + "/" + p.name}}
		if p.hook {
			hook := filepath.Join(r.layout.JobBinDir(name), p.name+"-pre-start")
			r.write(hook, "#!/bin/sh\n"+testproc.EnvBehaviour+"=gate exec "+r.self+"\n", 0o755)
			tps[i].YAML = fmt.Sprintf("  hooks:\n    pre_start: %s\n", hook)
		}
	}
	r.root.Job(name, tps...)
}

func (r *rig) write(path, content string, mode os.FileMode) { r.root.Write(path, content, mode) }

// release lets every "gate" hook, running or yet to run, finish.
func (r *rig) release() { r.write(r.gate, "", 0o644) }

// startDaemon starts a daemon process on the root with env added, and
// returns at once: see settled.
func (r *rig) startDaemon(env ...string) *daemonProc {
	r.t.Helper()
	cmd := exec.Command(r.self)
	cmd.Env = append(os.Environ(), append([]string{envDaemon + "=" + r.layout.Root(),
		"GORACE=" + testproc.NoRaceExitDelay}, env...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	d := &daemonProc{cmd: cmd, logs: make(chan string, 4096), done: make(chan struct{}),
		file: filepath.Join(r.layout.Root(), fmt.Sprintf("daemon-%d.log", cmd.Process.Pid))}
	go d.read(stderr)
	r.daemon = d
	r.owned[cmd.Process.Pid] = true
	return d
}

// read passes the daemon's log lines on and keeps them in d.file.
func (d *daemonProc) read(stderr io.Reader) {
	defer close(d.done)
	f, _ := os.Create(d.file)
	defer f.Close()
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		fmt.Fprintln(f, sc.Text())
		select {
		case d.logs <- sc.Text():
		default:
		}
	}
}

// expectLog waits for a log line of the current daemon that contains s.
func (r *rig) expectLog(s string) string {
	r.t.Helper()
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	for {
		select {
		case ln := <-r.daemon.logs:
			if strings.Contains(ln, s) {
				return ln
			}
		case <-r.daemon.done:
			r.t.Fatalf("the daemon ended before logging %q", s)
		case <-guard.C:
			r.t.Fatalf("the daemon did not log %q within %s", s, testproc.Guard)
		}
	}
}

// up starts a daemon with env added, waits until it has settled, then for
// the "ready" reports of ready processes.
func (r *rig) up(ready int, env ...string) {
	r.t.Helper()
	r.startDaemon(env...)
	r.settled()
	for range ready {
		r.rep.Expect(r.t, "ready")
	}
}

// same checks that a process still runs as it did: once, with the same
// init, the same executable and no restart since.
func (r *rig) same(before control.ProcessStatus) {
	r.t.Helper()
	st := r.once(before.Job, before.Process)
	if st.PID != before.PID || st.ExecPID != before.ExecPID || st.Restarts != before.Restarts {
		r.t.Fatalf("%s/%s changed: before %+v, after %+v", before.Job, before.Process, before, st)
	}
}

// settled waits until the current daemon has started every process of
// its first load and each has settled.
func (r *rig) settled() { r.t.Helper(); r.expectLog("msg=supervising") }

// waitFor re-checks cond at each line the daemon logs (it logs every
// change of state) until cond holds.
func (r *rig) waitFor(what string, cond func() bool) {
	r.t.Helper()
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	for !cond() {
		select {
		case <-r.daemon.logs:
		case <-guard.C:
			r.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// killDaemon kills the current daemon outright and returns the processes
// that were its children at that moment (inits and spare inits).
func (r *rig) killDaemon() []int {
	r.t.Helper()
	d := r.daemon
	kids := procinit.ChildrenOf(d.cmd.Process.Pid)
	if err := d.cmd.Process.Signal(unix.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	d.cmd.Wait()
	<-d.done
	r.daemon = nil
	return kids
}

// stopDaemon ends the current daemon with SIGTERM (it stops every process)
// and checks that it exits 0.
func (r *rig) stopDaemon() {
	r.t.Helper()
	d := r.daemon
	r.daemon = nil
	d.cmd.Process.Signal(unix.SIGTERM)
	err := d.cmd.Wait()
	<-d.done
	if err != nil {
		b, _ := os.ReadFile(d.file)
		r.t.Errorf("daemon: %v\n%s", err, b)
	}
}

func (r *rig) client() *control.Client { return control.NewClient(r.layout.ControlSocket()) }

func (r *rig) status(job, p string) control.ProcessStatus {
	r.t.Helper()
	st, err := r.client().Status(r.t.Context())
	if err != nil {
		r.t.Fatal(err)
	}
	for _, ps := range st.Processes {
		if ps.Job == job && ps.Process == p {
			return ps
		}
	}
	return control.ProcessStatus{}
}
