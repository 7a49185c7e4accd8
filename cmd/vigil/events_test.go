package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

func TestEventLine(t *testing.T) {
	at := time.Date(2026, 11, 30, 2, 0, 1, 0, time.UTC)
	for _, c := range []struct {
		ev   control.Event
		want string
	}{
		{control.Event{Kind: "exited", Exit: &control.Exit{Code: 1}, Restarts: 3},
			"2026-11-30T02:00:01Z web/server exited code 1 (restart 3)"},
		{control.Event{Kind: "exited", Exit: &control.Exit{Signal: "SIGKILL"}},
			"2026-11-30T02:00:01Z web/server exited signal KILL"},
		{control.Event{Kind: "oom-killed", Exit: &control.Exit{Signal: "SIGKILL", OOM: true}, Restarts: 1},
			"2026-11-30T02:00:01Z web/server oom-killed signal KILL (restart 1)"},
		{control.Event{Kind: "exited", Exit: &control.Exit{Error: "exec: no such file"}},
			"2026-11-30T02:00:01Z web/server exited without running: exec: no such file"},
		{control.Event{Kind: "started", PID: 42}, "2026-11-30T02:00:01Z web/server started pid 42"},
		{control.Event{Kind: "restarted", PID: 43, Restarts: 2, DownSeconds: 0.0042},
			"2026-11-30T02:00:01Z web/server restarted pid 43 (restart 2, down 4.2ms)"},
		{control.Event{Kind: "backoff", Restarts: 4}, "2026-11-30T02:00:01Z web/server backoff (restart 4)"},
		{control.Event{Kind: "probe-failed", Message: "liveness probe failed: 503"},
			"2026-11-30T02:00:01Z web/server probe-failed: liveness probe failed: 503"},
		{control.Event{Kind: "stopped"}, "2026-11-30T02:00:01Z web/server stopped"},
	} {
		c.ev.Time, c.ev.Job, c.ev.Process = at, "web", "server"
		if got := eventLine(c.ev); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
	cfg := control.Event{Time: at, Job: "web", Kind: "config-error", Message: "a.yml:3: x\nb"}
	if got := eventLine(cfg); got != "2026-11-30T02:00:01Z web config-error: a.yml:3: x; b" {
		t.Errorf("config error line %q", got)
	}
	if got := eventLine(control.Event{Time: at, Kind: "lost", Lost: 7}); got != "2026-11-30T02:00:01Z - lost 7 events (this reader fell behind)" {
		t.Errorf("lost line %q", got)
	}
}

// streamLines starts `vigil ARGS` and returns its stdout lines on a
// channel closed when its output ends, and the command to wait for.
func (c *cli) streamLines(args ...string) (<-chan string, *exec.Cmd, *strings.Builder) {
	cmd := exec.Command(vigilBin, append(args, "--root", c.root)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines, cmd, &stderr
}

func nextLine(t *testing.T, lines <-chan string) (string, bool) {
	t.Helper()
	select {
	case l, ok := <-lines:
		return l, ok
	case <-time.After(testproc.Guard):
		t.Fatal("no event line")
	}
	return "", false
}

// TestEventsCommand: --json streams the recent starts and then a kill's
// exit and restart as they happen, and ends with an error when the daemon
// goes away; the human form prints lines until Ctrl-C, which exits 0.
func TestEventsCommand(t *testing.T) {
	c := newCLI(t)
	d := c.daemon()

	human, hcmd, _ := c.streamLines("events", "-n", "2")
	line := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ web/[ab] started pid \d+$`)
	for range 2 {
		if l, _ := nextLine(t, human); !line.MatchString(l) {
			t.Fatalf("human line %q", l)
		}
	}
	hcmd.Process.Signal(syscall.SIGINT)
	for range human {
	}
	if err := hcmd.Wait(); err != nil {
		t.Fatalf("events after Ctrl-C: %v", err)
	}

	lines, cmd, stderr := c.streamLines("events", "--json", "-n", "10")
	next := func(proc string) control.Event {
		t.Helper()
		for {
			l, ok := nextLine(t, lines)
			if !ok {
				t.Fatalf("the stream ended; stderr: %s", stderr)
			}
			var ev control.Event
			if err := json.Unmarshal([]byte(l), &ev); err != nil {
				t.Fatalf("not one JSON object: %q", l)
			}
			if ev.Job == "web" && ev.Process == proc {
				return ev
			}
		}
	}
	if ev := next("a"); ev.Kind != control.EventStarted || ev.Seq == 0 {
		t.Fatalf("first event of web/a %+v", ev)
	}
	st := c.status()
	syscall.Kill(st.Processes[0].ExecPID, syscall.SIGKILL)
	if ev := next("a"); ev.Kind != control.EventExited || ev.Exit == nil || ev.Exit.Signal != "SIGKILL" {
		t.Fatalf("after the kill %+v", ev)
	}
	if ev := next("a"); ev.Kind != control.EventRestarted || ev.Restarts != 1 || ev.PID == st.Processes[0].PID {
		t.Fatalf("after the exit %+v", ev)
	}

	d.Process.Signal(syscall.SIGTERM)
	for range lines { // the stops, then the end of the stream
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "vigil: the event stream ended: the daemon went away") {
		t.Fatalf("events when the daemon went away: %v, %q", err, stderr)
	}
}
