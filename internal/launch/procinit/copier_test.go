package procinit

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"
)

// copierGuard bounds the waits of these tests; it is a failure guard only.
const copierGuard = 10 * time.Second

// pipeCopier starts a copier whose log is a pipe the test reads, so that
// the test waits on the copy itself.
func pipeCopier(t *testing.T, stamps bool) (c *copier, log *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	c, err = newCopier(w, "", nil, make(chan struct{}, 1), stamps, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, r
}

func expectCopied(t *testing.T, log *os.File, want string) {
	t.Helper()
	log.SetReadDeadline(time.Now().Add(copierGuard))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(log, got); err != nil || string(got) != want {
		t.Fatalf("copied %q (%v), want %q", got, err, want)
	}
}

// TestCopierCopiesOutputAsItComes: the copier waits for the first output
// without a buffer, then copies each write, the first one included,
// whether it came before or after the copier began waiting.
func TestCopierCopiesOutputAsItComes(t *testing.T) {
	c, log := pipeCopier(t, false)
	for _, chunk := range []string{"first line\n", "second", " line\n", string(bytes.Repeat([]byte("x"), 3*copyBuffer+7))} {
		if _, err := c.writer.WriteString(chunk); err != nil {
			t.Fatal(err)
		}
		expectCopied(t, log, chunk)
	}
	c.closeWriter()
	select {
	case <-c.done:
	case <-time.After(copierGuard):
		t.Fatal("the copier did not end when its pipe's last writer went")
	}
}

// TestCopierEndsWithoutOutput: a stream nobody ever wrote to ends its
// copier when the pipe's last writer goes.
func TestCopierEndsWithoutOutput(t *testing.T) {
	c, _ := pipeCopier(t, false)
	c.closeWriter()
	select {
	case <-c.done:
	case <-time.After(copierGuard):
		t.Fatal("the copier of a silent stream did not end with its pipe")
	}
	if n := c.wait(time.Second); n != 0 {
		t.Fatalf("dropped %d bytes of nothing", n)
	}
}

// TestStampingMakesNoGarbage: once its buffers have grown, a stamped
// stream allocates nothing per chunk, so that a busy one never makes the
// init's collector run.
func TestStampingMakesNoGarbage(t *testing.T) {
	c := &copier{stamps: true}
	chunk := []byte("one line\nand half of anoth")
	c.stamp(chunk)
	if n := testing.AllocsPerRun(100, func() { c.stamp(chunk) }); n != 0 {
		t.Fatalf("stamping a chunk allocates %v times", n)
	}
	if got := string(c.stamp([]byte("er\n"))); got != "er\n" {
		t.Fatalf("a line's rest was stamped again: %q", got)
	}
}
