package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// screen is a command on a pseudo-terminal of 80x24, and what it drew.
type screen struct {
	t      *testing.T
	pty    *pty
	cmd    *exec.Cmd
	before unix.Termios // the terminal's modes before the command ran

	mu      sync.Mutex
	out     bytes.Buffer
	changed chan struct{} // closed and replaced at each read
	ended   chan struct{} // closed when the terminal has no writer left
}

// startOnPTY starts vigil with args on a new pseudo-terminal as its
// controlling terminal, with env added.
func startOnPTY(t *testing.T, env []string, args ...string) *screen {
	t.Helper()
	p := openPTY(t)
	if err := unix.IoctlSetWinsize(int(p.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	before, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(vigilBin, args...)
	cmd.Env = append(append(os.Environ(), "TERM=xterm"), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.slave, p.slave, p.slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &screen{t: t, pty: p, cmd: cmd, before: *before, changed: make(chan struct{}), ended: make(chan struct{})}
	go s.read()
	return s
}

// read copies what the command writes, until no writer is left (EIO).
// The test's own copy of the slave stays open until the command has
// ended, so that the terminal's modes can be read back.
func (s *screen) read() {
	defer close(s.ended)
	buf := make([]byte, 4096)
	for {
		n, err := s.pty.master.Read(buf)
		s.mu.Lock()
		s.out.Write(buf[:n])
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// frame is the last whole screen drawn, as lines of text without their
// escape codes.
func (s *screen) frame() ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.out.String()
	end := strings.LastIndex(out, escClearBelow)
	if end < 0 {
		return nil, false
	}
	start := strings.LastIndex(out[:end], escHome)
	if start < 0 {
		return nil, false
	}
	text := regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`).ReplaceAllString(out[start:end], "")
	return strings.Split(text, "\r\n"), true
}

// waitFor waits until a frame drawn holds want (a regular expression),
// and returns that frame; it fails the test after a while.
func (s *screen) waitFor(want string) []string {
	s.t.Helper()
	re := regexp.MustCompile(want)
	guard := time.After(testproc.Guard)
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if lines, ok := s.frame(); ok && re.MatchString(strings.Join(lines, "\n")) {
			return lines
		}
		select {
		case <-changed:
		case <-guard:
			lines, _ := s.frame()
			s.t.Fatalf("no frame matched %q; the last:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}

// keys types on the terminal.
func (s *screen) keys(k string) {
	s.t.Helper()
	if _, err := s.pty.master.WriteString(k); err != nil {
		s.t.Fatal(err)
	}
}

// end waits for the command's exit and returns its status, having checked
// that the terminal is as it was found: its modes, the main screen, the
// cursor shown.
func (s *screen) end() int {
	s.t.Helper()
	err := s.cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatal(err)
	}
	after, terr := unix.IoctlGetTermios(int(s.pty.slave.Fd()), unix.TCGETS)
	s.pty.slave.Close()
	<-s.ended
	if terr != nil || *after != s.before {
		s.t.Errorf("the terminal's modes were not restored: before %+v, after %+v (%v)", s.before, after, terr)
	}
	s.mu.Lock()
	out := s.out.String()
	s.mu.Unlock()
	if !strings.HasSuffix(strings.TrimRight(out, "\r\n"), escLeaveScreen) {
		s.t.Errorf("the screen was not given back: output ends %q", out[max(0, len(out)-80):])
	}
	return code
}

// TestTopOnATerminal runs vigil top on a pseudo-terminal of 80 columns
// against a daemon: it shows every process, follows a stop and a start
// made with its keys (from the daemon's events), filters, sorts, shows a
// process's logs, fits 80 columns, and leaves the terminal as it was on
// q and on SIGTERM; NO_COLOR takes the colours away.
func TestTopOnATerminal(t *testing.T) {
	c := newCLI(t) // web/a and web/b, printing "started ..."
	c.daemon()
	s := startOnPTY(t, nil, "top", "--root", c.root)
	frame := s.waitFor(`web/a +running .*\n.*web/b +running`)
	for _, l := range frame {
		if n := utf8.RuneCountInString(l); n > 80 {
			t.Errorf("a line of %d columns: %q", n, l)
		}
	}
	if !strings.Contains(frame[0], "2 running") || !strings.Contains(frame[len(frame)-1], "q quit") {
		t.Errorf("header or keys missing:\n%s", strings.Join(frame, "\n"))
	}
	s.mu.Lock()
	colored := strings.Contains(s.out.String(), "\x1b[32mrunning")
	s.mu.Unlock()
	if !colored {
		t.Error("no colour for running without NO_COLOR")
	}

	// Stop the selected process (web/a, the first), which asks first.
	s.keys("x")
	s.waitFor(`stop web/a\? y: yes`)
	s.keys("y")
	s.waitFor(`web/a +stopped`)
	if st := c.status(); st.Processes[0].State != "stopped" || st.Processes[1].State != "running" {
		t.Fatalf("after x y: %+v", st.Processes)
	}
	s.keys("s")
	s.waitFor(`web/a +running`)

	// Filter to b, and follow its logs: a signal makes it print a line.
	s.keys("//b\r")
	frame = s.waitFor(`filter: /b`)
	if strings.Contains(strings.Join(frame[2:len(frame)-2], "\n"), "web/a") {
		t.Errorf("the filter let web/a through:\n%s", strings.Join(frame, "\n"))
	}
	s.keys("\r")
	s.waitFor(`the logs of web/b`)
	s.waitFor(`started`)
	if _, code := c.run("signal", "web", "-p", "b", "HUP"); code != 0 {
		t.Fatal("signal failed")
	}
	s.waitFor(`got HUP`)
	s.keys("q")
	s.waitFor(`JOB/PROCESS`)
	s.keys("\x1b") // the filter goes
	s.waitFor(`web/a .*\n.*web/b`)
	s.keys("ooo")
	s.waitFor(`sort: memory`)
	s.keys("q")
	if code := s.end(); code != 0 {
		t.Fatalf("top exited %d", code)
	}

	// SIGTERM ends it as q does; NO_COLOR leaves the colours out.
	s = startOnPTY(t, []string{"NO_COLOR=1"}, "top", "--root", c.root)
	s.waitFor(`web/b +running`)
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.end(); code != 0 {
		t.Fatalf("top exited %d on SIGTERM", code)
	}
	if regexp.MustCompile(`\x1b\[3[0-9]m`).MatchString(s.out.String()) {
		t.Error("colours despite NO_COLOR")
	}
}

// TestTerminalRestoredOnPanic: a panic in a full-screen view gives the
// terminal back (its modes, the main screen, the cursor) before it goes
// on.
func TestTerminalRestoredOnPanic(t *testing.T) {
	p := openPTY(t)
	before, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	var during *unix.Termios
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the view's panic", r)
			}
		}()
		withTerminal(p.slave, p.slave, func(*terminal) error {
			during, _ = unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
			panic("boom")
		})
	}()
	after, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
	if err != nil || *after != *before {
		t.Errorf("modes not restored: %+v, want %+v (%v)", after, before, err)
	}
	if during == nil || during.Lflag&unix.ICANON != 0 || during.Lflag&unix.ECHO != 0 {
		t.Errorf("the view did not run in raw mode: %+v", during)
	}
	p.slave.Close()
	if out := p.read(t); out != escEnterScreen+escLeaveScreen {
		t.Errorf("written %q", out)
	}
}

// TestDecodeKeys reads what a terminal sends for keys.
func TestDecodeKeys(t *testing.T) {
	got := decodeKeys([]byte("jk\x1b[A\x1b[B\x1b[5~\x1bOB\r\x7f\x03/x\x1b[1;5C"))
	want := []string{"j", "k", keyUp, keyDown, keyPageUp, keyDown, keyEnter, keyBack, keyCtrlC, "/", "x"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := decodeKeys([]byte{0x1b}); len(got) != 1 || got[0] != keyEscape {
		t.Errorf("a lone escape: %q", got)
	}
}

// TestTopView lays out a status at 80 columns: every line fits, long
// names and exits are cut with "…", the CPU share comes from two reads a
// second apart, and sorting by memory puts the largest first.
func TestTopView(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	proc := func(job, name string, cpu float64, rss int64) control.ProcessStatus {
		return control.ProcessStatus{Job: job, Process: name, State: "running", Wanted: "up", Ready: true, PID: 100,
			Since: now.Add(-time.Hour), Usage: &control.Usage{CPUSeconds: cpu, RSSBytes: rss},
			LastExit: &control.Exit{Signal: "SIGKILL", At: now.Add(-time.Minute), Description: "killed by signal SIGKILL"}}
	}
	st := control.Status{Daemon: control.DaemonInfo{Root: "/var/vcap"}, Processes: []control.ProcessStatus{
		proc("a-job-with-a-rather-long-name", "and-a-long-process-name", 1, 10<<20), proc("db", "pg", 2, 200<<20)}}
	v := &topView{}
	v.update(st, now)
	st2 := st
	st2.Processes = []control.ProcessStatus{proc("a-job-with-a-rather-long-name", "and-a-long-process-name", 1.5, 10<<20), proc("db", "pg", 2.25, 200<<20)}
	v.update(st2, now.Add(2*time.Second))
	lines := v.render(80, 24, now)
	if len(lines) != 24 {
		t.Errorf("%d lines", len(lines))
	}
	for _, l := range lines {
		plain := regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`).ReplaceAllString(l, "")
		if utf8.RuneCountInString(plain) > 80 {
			t.Errorf("too wide: %q", plain)
		}
	}
	row := regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`).ReplaceAllString(lines[2], "")
	if !strings.HasPrefix(row, "a-job-with-a-ra… ") || !strings.Contains(row, " 25.0 ") || !strings.HasSuffix(row, " SIGKILL 1m") {
		t.Errorf("first row %q", row)
	}
	v.sort = 3 // memory
	if row := v.render(80, 24, now)[2]; !strings.Contains(row, "db/pg") {
		t.Errorf("by memory, first %q", row)
	}
}
