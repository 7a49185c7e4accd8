package systemd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/supervise/restart"
)

// ladderProc records what the ladder does to it, with the time.
type ladderProc struct {
	events chan supervise.ProcessEvent
	did    []string
	at     []time.Duration
	start  time.Time
}

func (p *ladderProc) note(s string) {
	p.did = append(p.did, s)
	p.at = append(p.at, time.Since(p.start))
}
func (p *ladderProc) PID() int                              { return 1 }
func (p *ladderProc) Events() <-chan supervise.ProcessEvent { return p.events }
func (p *ladderProc) Signal(s syscall.Signal) error         { p.note(s.String()); return nil }
func (p *ladderProc) Kill() error                           { p.note("kill"); return nil }
func (p *ladderProc) ForceKill() error {
	p.note("force")
	p.events <- supervise.ProcessEvent{Exit: supervise.Exit{Signal: syscall.SIGKILL}}
	return nil
}

// oneRunner hands out one prepared process.
type oneRunner struct{ p supervise.Process }

func (r oneRunner) Start(context.Context) (supervise.Process, error) { return r.p, nil }

func TestStopLadder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &ladderProc{events: make(chan supervise.ProcessEvent, 2), start: time.Now()}
		p.events <- supervise.ProcessEvent{Running: true, ExecPID: 2}
		sigs := make(chan os.Signal, 2)
		sigs <- syscall.SIGHUP // passed on, no ladder
		sigs <- syscall.SIGINT // KillSignal for shutdown_signal: INT
		cfg := supervise.Config{ID: supervise.ID{Job: "j", Process: "p"}, Runner: oneRunner{p},
			Timing: supervise.Timing{StopSignal: syscall.SIGINT, Restart: restart.Policy{Mode: restart.Never}}}
		code, err := supervised(context.Background(), cfg, sigs, func() {}, func() {})
		if err != nil || code != 128+9 {
			t.Errorf("exit status %d, %v", code, err)
		}
		want := []string{"hangup", "interrupt", "quit", "kill", "force"}
		wantAt := []time.Duration{0, 0, 15 * time.Second, 17 * time.Second, 22 * time.Second}
		if len(p.did) != len(want) {
			t.Fatalf("did %v, want %v", p.did, want)
		}
		for i := range want {
			if p.did[i] != want[i] || p.at[i] != wantAt[i] {
				t.Errorf("step %d: %s at %v, want %s at %v", i, p.did[i], p.at[i], want[i], wantAt[i])
			}
		}
	})
}

func TestExitStatus(t *testing.T) {
	for e, want := range map[supervise.Exit]int{
		{Code: 3}: 3, {Signal: syscall.SIGTERM}: 143, {Err: "exec: not found", Code: 127}: 127, {Err: "x"}: 1,
	} {
		if got := status(e); got != want {
			t.Errorf("status(%+v) = %d, want %d", e, got, want)
		}
	}
}

// notifyingProc also reports readiness, as launch.Process does with
// health.notify.
type notifyingProc struct {
	*ladderProc
	ready chan bool
}

func (p notifyingProc) Ready() <-chan bool { return p.ready }

func TestReadyRelayAndWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := notifyingProc{&ladderProc{events: make(chan supervise.ProcessEvent, 2), start: time.Now()}, make(chan bool, 2)}
		p.events <- supervise.ProcessEvent{Running: true, ExecPID: 2}
		relayed := 0
		cfg := supervise.Config{ID: supervise.ID{Job: "j", Process: "p"}, Runner: oneRunner{p},
			Timing: supervise.Timing{Restart: restart.Policy{Mode: restart.Never},
				Health: supervise.HealthTiming{Notify: true}}}
		done := make(chan int, 1)
		go func() {
			code, _ := supervised(context.Background(), cfg, nil, func() {}, func() { relayed++ })
			done <- code
		}()
		p.ready <- true // READY=1
		synctest.Wait()
		if relayed != 1 {
			t.Fatalf("READY=1 relayed %d times", relayed)
		}
		p.ready <- false // the watchdog expired: stopped through the ladder, not restarted
		code := <-done
		if code != 128+9 {
			t.Errorf("exit %d", code)
		}
		if len(p.did) == 0 || p.did[len(p.did)-1] != "force" {
			t.Errorf("did %v", p.did)
		}
	})
}

func TestSdNotify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := sdNotify(path, "READY=1"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Errorf("read %q, %v", buf[:n], err)
	}
}

// TestExecEndsOnLivenessFailure: under systemd, a process failing its
// liveness probe is stopped through the ladder and `vigil exec` ends with
// its status, so that systemd restarts the unit.
func TestExecEndsOnLivenessFailure(t *testing.T) {
	l, err := boshpath.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := l.BPMConfig("web")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte(`processes:
- name: web
  executable: /bin/sleep
  args: ["1000"]
  health:
    liveness: {exec: [/bin/false], period: 20ms, failure_threshold: 2}
`), 0o644)
	self, _ := os.Executable()
	code, err := Exec(context.Background(), ExecConfig{Layout: l, Job: "web", Proc: "web", Init: self,
		InitEnv: []string{"GORACE=atexit_sleep_ms=0"}, NoIsolation: true})
	if err != nil || code != 128+int(syscall.SIGTERM) {
		t.Fatalf("vigil exec ended with %d, %v; want 143 (stopped by the ladder's TERM)", code, err)
	}
}
