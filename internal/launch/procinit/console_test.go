package procinit

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestPrefixLines(t *testing.T) {
	atStart := true
	var out []byte
	for _, chunk := range []string{"a\nb", "c\n", "\n", "d"} {
		out = prefixLines(out, []byte(chunk), []byte("> "), &atStart)
	}
	if string(out) != "> a\n> bc\n> \n> d" || atStart {
		t.Fatalf("%q, at start %v", out, atStart)
	}
}

// TestConsoleNeverBlocks: a console nobody reads fills its pipe, then its
// queue, and then drops output: the copier's sends never wait, and close
// returns without the reader.
func TestConsoleNeverBlocks(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	c := newConsole(w, "job/p")
	chunk := make([]byte, 4096)
	for range 2 * consoleQueue {
		c.send(chunk)
	}
	if c.dropped.Load() == 0 {
		t.Fatal("nothing dropped from a console nobody reads")
	}
	c.close(10 * time.Millisecond)
}

func TestTimestamp(t *testing.T) {
	at := time.Date(2026, 11, 30, 2, 0, 1, 234_567_000, time.FixedZone("x", 3600))
	if got := string(appendTimestamp(nil, at)); got != "2026-11-30T01:00:01.234Z " {
		t.Fatalf("%q", got)
	}
}

// BenchmarkPrefixLines is the cost of stamping (or prefixing) one full
// read of the copier: 16 KiB of 64-byte lines.
func BenchmarkPrefixLines(b *testing.B) {
	chunk := []byte(strings.Repeat(strings.Repeat("x", 63)+"\n", 256))
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		atStart := true
		prefixLines(nil, chunk, appendTimestamp(nil, time.Now()), &atStart)
	}
}

// TestConsoleOnlyWhenGiven: without ConsoleEnv the init takes no
// descriptor, though 4 and 5 are open: they are then the runtime's or
// another's (an init that took its own epoll descriptor died at its first
// wait, "netpoll failed", on Debian 13's kernel).
func TestConsoleOnlyWhenGiven(t *testing.T) {
	for range 2 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
	}
	open := func(fd int) bool { _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); return err == nil }
	if !open(consoleOutFD) || !open(consoleErrFD) {
		t.Fatal("descriptors 4 and 5 are not open in the test")
	}
	t.Setenv(ConsoleEnv, "")
	if out, errs := inheritedConsole(); out != nil || errs != nil {
		t.Fatal("took descriptors it was not given")
	}
	if !open(consoleOutFD) || !open(consoleErrFD) {
		t.Fatal("closed descriptors it was not given")
	}
}
