package testproc

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Line is one report from a child: its pid and the rest of the line.
type Line struct {
	PID  int
	Text string
}

// Listener collects the reports of every child that connects to it.
type Listener struct {
	Path    string
	lines   chan Line
	skipped []Line // lines an Expect passed over, for later Expects
}

// Listen opens a report socket in a temporary directory. It is closed, and
// its goroutines waited for, when the test ends.
func Listen(t testing.TB) *Listener {
	t.Helper()
	dir, err := makeShortDir()
	if err != nil {
		t.Fatal(err)
	}
	return listen(t, filepath.Join(dir, "r.sock"), func() { removeDir(dir) })
}

// ListenAbstract opens a report socket in the abstract namespace, which
// children see whatever their mount namespace and root (they share the
// network namespace).
func ListenAbstract(t testing.TB) *Listener {
	t.Helper()
	return listen(t, fmt.Sprintf("@vigil-testproc-%d-%d", os.Getpid(), time.Now().UnixNano()), func() {})
}

func listen(t testing.TB, path string, cleanup func()) *Listener {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{Path: path, lines: make(chan Line, 1024)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { l.read(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		cleanup()
	})
	return l
}

func (l *Listener) read(c net.Conn) {
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		pid, text, _ := strings.Cut(sc.Text(), " ")
		n, _ := strconv.Atoi(pid)
		select {
		case l.lines <- Line{PID: n, Text: text}:
		default: // a test that stopped reading; drop
		}
	}
}

// Env returns the environment entries that make a child report here.
func (l *Listener) Env(behaviour string, extra ...string) map[string]string {
	env := map[string]string{EnvBehaviour: behaviour, EnvSocket: l.Path, "GORACE": NoRaceExitDelay}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// Guard bounds every wait in Expect. It is a failure guard only: a test
// never relies on it passing.
const Guard = 60 * time.Second

// Expect returns the earliest line not yet returned that starts with
// prefix, waiting for it if needed. Lines passed over are kept for later
// calls, so reports that race each other (a child and its grandchild) can
// be expected in any order. It is not safe for concurrent use.
func (l *Listener) Expect(t testing.TB, prefix string) Line {
	t.Helper()
	for i, ln := range l.skipped {
		if strings.HasPrefix(ln.Text, prefix) {
			l.skipped = append(l.skipped[:i:i], l.skipped[i+1:]...)
			return ln
		}
	}
	guard := time.NewTimer(Guard)
	defer guard.Stop()
	for {
		select {
		case ln := <-l.lines:
			if strings.HasPrefix(ln.Text, prefix) {
				return ln
			}
			l.skipped = append(l.skipped, ln)
		case <-guard.C:
			t.Fatalf("no report %q within %s", prefix, Guard)
		}
	}
}

// Fields splits the text of a line after its first word into integers, e.g.
// "ready 12 10" into [12 10].
func (ln Line) Fields() []int {
	f := strings.Fields(ln.Text)
	out := make([]int, 0, len(f))
	for _, s := range f[1:] {
		n, _ := strconv.Atoi(s)
		out = append(out, n)
	}
	return out
}
