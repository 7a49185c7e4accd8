package systemd

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-bosh/vigil/supervise"
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

func TestStopLadder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &ladderProc{events: make(chan supervise.ProcessEvent, 1), start: time.Now()}
		sigs := make(chan os.Signal, 2)
		sigs <- syscall.SIGHUP // passed on, no ladder
		sigs <- syscall.SIGINT // KillSignal for shutdown_signal: INT
		code := waitExit(p, sigs, supervise.Timing{}, func() {})
		if code != 128+9 {
			t.Errorf("exit status %d", code)
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

// notifyingProc also reports readiness, as proc.Process does with
// health.notify.
type notifyingProc struct {
	*ladderProc
	ready chan bool
}

func (p notifyingProc) Ready() <-chan bool { return p.ready }

func TestReadyRelayAndWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := notifyingProc{&ladderProc{events: make(chan supervise.ProcessEvent, 1), start: time.Now()}, make(chan bool, 2)}
		p.ready <- true
		p.ready <- false // the watchdog expired
		relayed := 0
		code := waitExit(p, nil, supervise.Timing{}, func() { relayed++ })
		if relayed != 1 || code != 128+9 {
			t.Errorf("relayed %d, exit %d", relayed, code)
		}
		if len(p.did) != 4 || p.did[0] != "aborted" || p.did[1] != "quit" {
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
