package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/logtail"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// logWriterJob is a shell process writing numbered 64-byte lines to its
// stdout in batches: it reads a count from $GATE, writes that many lines,
// then appends the last line's number to $ACK (outside the log directory).
const logWriterJob = `processes:
- name: writer
  executable: /bin/sh
  env: {GATE: %q, ACK: %q}
  args:
  - -c
  - |
    exec 3<"$GATE"
    i=0
    while read n <&3; do
      n=$((i+n))
      while [ $i -lt $n ]; do i=$((i+1)); printf 'line %%08d %%s\n' $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done
      echo $i >>"$ACK"
    done
`

// dropLog passes the daemon's log messages about failing log writes on.
type dropLog chan string

func (l dropLog) Enabled(context.Context, slog.Level) bool { return true }
func (l dropLog) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "log writes") {
		l <- r.Message
	}
	return nil
}
func (l dropLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l dropLog) WithGroup(string) slog.Handler      { return l }

func (l dropLog) await(t *testing.T, want string) {
	t.Helper()
	select {
	case m := <-l:
		if m != want {
			t.Fatalf("log message %q, want %q", m, want)
		}
	case <-time.After(testproc.Guard):
		t.Fatalf("no log message %q within %s", want, testproc.Guard)
	}
}

// TestFullDisk runs a process whose log directory is a 256 KiB tmpfs, most
// of it taken: its output overflows, yet it keeps running and writing; the
// status shows the dropped bytes as soon as dropping starts; and once space
// is freed its output is logged again. The space freed is more than the
// pipe and the copier can still hold, so nothing is dropped after that.
func TestFullDisk(t *testing.T) {
	h := newHarness(t)
	logDir := h.layout.LogDir("disk")
	if err := os.MkdirAll(logDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", logDir, "tmpfs", 0, "size=256k"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("mounting a tmpfs is not permitted here (%v): the full-disk test needs root", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(logDir, unix.MNT_DETACH) })
	filler := filepath.Join(logDir, "filler")
	if err := os.WriteFile(filler, make([]byte, 220<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gatePath, ack := filepath.Join(dir, "gate"), filepath.Join(dir, "ack")
	if err := syscall.Mkfifo(gatePath, 0o600); err != nil {
		t.Fatal(err)
	}
	gate, err := os.OpenFile(gatePath, os.O_RDWR, 0) // never blocks, never ends
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	ctx, cancel := context.WithTimeout(t.Context(), testproc.Guard) // a failure guard
	defer cancel()
	batch := func(n, total int) { // the writer writes n more lines; wait until it has
		t.Helper()
		fmt.Fprintf(gate, "%d\n", n)
		if err := logtail.Await(ctx, ack, 0, strconv.Itoa(total)); err != nil {
			t.Fatalf("the writer did not write its %d lines: %v", total, err)
		}
	}
	h.writeFile("disk", fmt.Sprintf(logWriterJob, gatePath, ack))
	logs := make(dropLog, 8)
	h.logger = slog.New(logs)
	h.start(supervise.Timing{})

	batch(2000, 2000) // 128 KB into about 36 KB of room: the writer is not held up
	logs.await(t, "log writes failing: dropping output")
	st := h.status("disk", "writer")
	if st.State != "running" || st.Output.DroppedStdout <= 0 {
		t.Fatalf("status with a full log disk: %+v", st)
	}
	t.Logf("dropped %d bytes of stdout with the disk full", st.Output.DroppedStdout) // read from the JSON status

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	batch(5, 2005)
	logs.await(t, "log writes succeed again")
	out := h.layout.StdoutLog("disk", "writer")
	if err := logtail.Await(ctx, out, 0, "line 00002005 "+strings.Repeat("x", 49)); err != nil {
		t.Fatalf("no line 2005 in %s: %v", out, err)
	}
	after := h.status("disk", "writer")
	if after.State != "running" || after.Output.DroppedStdout < st.Output.DroppedStdout {
		t.Fatalf("status after space was freed: %+v", after)
	}
	b, _ := os.ReadFile(out)
	if want := 2000*64 - int64(len(b)) + 5*64; after.Output.DroppedStdout != want {
		t.Errorf("dropped %d bytes, want %d (written minus logged)", after.Output.DroppedStdout, want)
	}
}
