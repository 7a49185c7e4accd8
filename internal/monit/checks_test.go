package monit

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// checked builds an engine over src whose services are all check units
// (the daemon's way for files, hosts and the system), recording the
// programs they run.
func checkedEngine(t *testing.T, src string) (*Engine, *spawns) {
	t.Helper()
	f, err := monitrc.Parse("f", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]Unit{}
	for _, s := range f.Services {
		units[s.Name] = NewCheckUnit(s, true)
	}
	sp := &spawns{}
	e := NewEngineWith(&monitrc.Config{Cycle: time.Second, Services: f.Services}, units,
		EngineOptions{Spawn: sp.spawn(time.Now()), Host: "h"})
	return e, sp
}

func summaryLine(e *Engine, name string) string {
	for _, l := range strings.Split(Summary(e, Host{Now: time.Now()}), "\n") {
		if strings.Contains(l, "'"+name+"'") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	return ""
}

// TestFileCheckRuns: a check file is really checked at each cycle: a
// missing file is "Does not exist" and runs the stop then the start
// program (monit's restart); once there it is accessible; its tests run
// (permission, size) with monit's words; unmonitor stops the checks.
func TestFileCheckRuns(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mounted")
	e, sp := checkedEngine(t, fmt.Sprintf(`check file mounter with path %s
  start program "/bin/mount it"
  stop program "/bin/umount it"
  if failed permission 600 then alert
  if size > 3 B then alert
  group vcap
`, p))
	ctx := context.Background()
	e.cycle(ctx)
	if got := summaryLine(e, "mounter"); got != "File 'mounter' Does not exist" {
		t.Fatalf("missing file: %q", got)
	}
	if got := sp.programs(); got != "/bin/umount it (Stopped); /bin/mount it (Started)" {
		t.Fatalf("programs: %q", got)
	}
	if err := os.WriteFile(p, []byte("abcd"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.cycle(ctx)
	if got := summaryLine(e, "mounter"); got != "File 'mounter' Permission failed" {
		t.Fatalf("wrong mode: %q", got)
	}
	if st := statusOf(e, e.cfg.Services[0]); st.Events != EventPermission|EventSize ||
		st.Message != "size test failed for "+p+" -- current size is 4 B" {
		t.Fatalf("status %+v", st)
	}
	os.Chmod(p, 0o600)
	os.WriteFile(p, []byte("ab"), 0o600)
	e.cycle(ctx)
	if got := summaryLine(e, "mounter"); got != "File 'mounter' accessible" {
		t.Fatalf("good file: %q", got)
	}
	status := FullStatus(e, Host{Now: time.Now()})
	for _, want := range []string{"  permission                        600\n", "  size                              2 B\n"} {
		if !strings.Contains(status, want) {
			t.Fatalf("status lacks %q:\n%s", want, status)
		}
	}
	if err := e.Do(ctx, "mounter", "unmonitor"); err != nil {
		t.Fatal(err)
	}
	os.Remove(p)
	before := sp.programs()
	e.cycle(ctx)
	if got := summaryLine(e, "mounter"); got != "File 'mounter' not monitored" || sp.programs() != before {
		t.Fatalf("unmonitored: %q, programs %q", got, sp.programs())
	}
}

// TestHostCheckRuns: a check host's connection tests really connect at
// each cycle, to the address as written; nothing listening is
// "Connection failed" (never "online"); unmonitor (as "unmonitor all"
// posts for every service) leaves it not monitored.
func TestHostCheckRuns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	e, _ := checkedEngine(t, fmt.Sprintf(`check host lb with address 127.0.0.1
  if failed port %d type tcp with timeout 2 seconds then alert
  group vcap
`, port))
	ctx := context.Background()
	e.cycle(ctx)
	if got := summaryLine(e, "lb"); got != "Remote Host 'lb' Connection failed" {
		t.Fatalf("nothing listening: %q", got)
	}
	want := fmt.Sprintf("failed, cannot open a connection to INET[127.0.0.1:%d] via TCP", port)
	if st := statusOf(e, e.cfg.Services[0]); st.Message != want {
		t.Fatalf("message %q, want %q", st.Message, want)
	}
	if !strings.Contains(FullStatus(e, Host{Now: time.Now()}), fmt.Sprintf("s to 127.0.0.1:%d [DEFAULT via TCP]", port)) {
		t.Fatalf("status:\n%s", FullStatus(e, Host{Now: time.Now()}))
	}
	ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Skipf("the port went to someone else: %v", err)
	}
	defer ln.Close()
	e.cycle(ctx)
	if got := summaryLine(e, "lb"); got != "Remote Host 'lb' online with all services" {
		t.Fatalf("listening: %q", got)
	}
	for _, s := range e.Config().Services { // what `monit unmonitor all` posts
		if err := e.Do(ctx, s.Name, "unmonitor"); err != nil {
			t.Fatal(err)
		}
	}
	e.cycle(ctx)
	if got := summaryLine(e, "lb"); got != "Remote Host 'lb' not monitored" {
		t.Fatalf("after unmonitor all: %q", got)
	}
	if got := summaryLine(e, "system_h"); got != "System 'system_h' not monitored" {
		t.Fatalf("system after unmonitor all: %q", got)
	}
}

// TestNotPerformed: a test vigil cannot perform says so in the status (a
// data access error with the test's line), never healthy.
func TestNotPerformed(t *testing.T) {
	e, _ := checkedEngine(t, "check host db with address 127.0.0.1\n  if failed port 1 protocol mysql then alert\n")
	e.cycle(context.Background())
	st := statusOf(e, e.cfg.Services[0])
	if st.Events != EventData || !strings.Contains(st.Message, "vigil does not speak MYSQL over TCP") ||
		!strings.Contains(st.Message, "(line 2)") {
		t.Fatalf("status %+v", st)
	}
	if got := summaryLine(e, "db"); got != "Remote Host 'db' Data access error" {
		t.Fatalf("summary %q", got)
	}
}

// TestEndCutsATestShort: the engine's end (a reload, the shutdown) ends a
// connection test waiting for an answer instead of waiting out its timeout, and the
// test cut short posts nothing.
func TestEndCutsATestShort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			// The request read: the test waits for the answer now.
			_, _ = bufio.NewReader(c).ReadString('\n')
			accepted <- c // held open, never answered
		}
	}()
	e, _ := checkedEngine(t, fmt.Sprintf(`check host slow with address 127.0.0.1
  if failed port %d protocol http with timeout 60 seconds then alert
`, ln.Addr().(*net.TCPAddr).Port))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.cycle(ctx) }()
	c := <-accepted
	defer c.Close()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cycle waited out the test's 60 s timeout after the engine's end")
	}
	if st := statusOf(e, e.cfg.Services[0]); st.Events != 0 {
		t.Fatalf("the test cut short posted %+v", st)
	}
}
