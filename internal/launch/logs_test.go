package launch

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/logtail"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/job"
)

// batchWriter is a shell process that writes numbered 64-byte lines to its
// stdout in batches: it reads a count from the gate FIFO, writes that many
// lines, and then appends the last line's number to the ack file; a count
// of 0 ends it. The test thus knows when the writer itself is done with a
// batch (it never blocked), whatever became of the lines.
type batchWriter struct {
	t    *testing.T
	gate *os.File
	dir  string // holds the ack file
	sent int    // lines asked for so far
}

const batchScript = `exec 3<"$GATE"
i=0
while read n <&3; do
  [ "$n" = 0 ] && exit 0
  n=$((i+n))
  while [ $i -lt $n ]; do i=$((i+1)); printf 'line %08d %s\n' $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done
  echo $i >>"$ACK"
done`

// lineSize is the length of each line batchScript writes, newline included.
const lineSize = 64

func newBatchWriter(t *testing.T) *batchWriter {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read-write: the open never blocks and the shell never sees an end.
	g, err := os.OpenFile(gate, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return &batchWriter{t: t, gate: g, dir: dir}
}

func (w *batchWriter) process(logs job.LogRotation) job.Process {
	return job.Process{
		Job: "job", Name: "writer", Executable: "/bin/sh", ResolvedExecutable: "/bin/sh",
		Args: []string{"-c", batchScript}, Workdir: "/", ShutdownSignal: syscall.SIGTERM, Logs: logs,
		Env: map[string]string{"GATE": w.gate.Name(), "ACK": filepath.Join(w.dir, "ack")},
	}
}

// batch has the writer write n more lines and waits until it has.
func (w *batchWriter) batch(n int) {
	w.t.Helper()
	w.sent += n
	if _, err := fmt.Fprintf(w.gate, "%d\n", n); err != nil {
		w.t.Fatal(err)
	}
	awaitLine(w.t, filepath.Join(w.dir, "ack"), strconv.Itoa(w.sent))
}

// finish ends the writer and waits for its exit, which is reported once
// its output has all been copied.
func (w *batchWriter) finish(pr supervise.Process) {
	w.t.Helper()
	if _, err := fmt.Fprintf(w.gate, "0\n"); err != nil {
		w.t.Fatal(err)
	}
	if ev := next(w.t, pr); ev.Running || ev.Exit.Code != 0 || ev.Exit.Signal != 0 {
		w.t.Fatalf("writer ended with %+v", ev)
	}
}

// awaitLine waits until the file at path holds the line want.
func awaitLine(t *testing.T, path, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testproc.Guard) // a failure guard
	defer cancel()
	if err := logtail.Await(ctx, path, 0, want); err != nil {
		t.Fatalf("no line %q in %s: %v", want, path, err)
	}
}

// line returns the text of line i as the writer writes it.
func line(i int) string {
	return fmt.Sprintf("line %08d %s", i, strings.Repeat("x", 49))
}

// readLines returns the line numbers in the files, in order, failing on a
// line that is not the writer's.
func readLines(t *testing.T, paths ...string) []int {
	t.Helper()
	var out []int
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			num, _, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "line "), " ")
			n, err := strconv.Atoi(num)
			if err != nil || sc.Text() != line(n) {
				f.Close()
				t.Fatalf("%s: line %q is not the writer's", p, sc.Text())
			}
			out = append(out, n)
		}
		f.Close()
	}
	return out
}

// consecutive fails unless nums runs from some start up to last, by one.
func consecutive(t *testing.T, nums []int, last int) {
	t.Helper()
	if len(nums) == 0 || nums[len(nums)-1] != last {
		t.Fatalf("lines end at %v, want %d", nums[max(len(nums)-1, 0):], last)
	}
	for i := 1; i < len(nums); i++ {
		if nums[i] != nums[i-1]+1 {
			t.Fatalf("line %d follows line %d: lost or duplicated lines", nums[i], nums[i-1])
		}
	}
}

// logEvents is a slog handler passing the messages about failing log
// writes and rotations on, for tests to wait on.
type logEvents chan string

func (l logEvents) Enabled(context.Context, slog.Level) bool { return true }
func (l logEvents) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "log writes") || strings.HasPrefix(r.Message, "log rotation") { // a few at most
		l <- r.Message
	}
	return nil
}
func (l logEvents) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logEvents) WithGroup(string) slog.Handler      { return l }

// await waits for a message that starts with prefix.
func (l logEvents) await(t *testing.T, prefix string) {
	t.Helper()
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	for {
		select {
		case m := <-l:
			if strings.HasPrefix(m, prefix) {
				return
			}
		case <-guard.C:
			t.Fatalf("no log message %q within %s", prefix, testproc.Guard)
		}
	}
}

// TestLogRotation has a process write 4000 lines as fast as it can into a
// log rotated at 8000 bytes, keeping 3 files: the files kept hold the last lines
// with none lost or duplicated, each close to the size, and the writer
// never waited on its log.
func TestLogRotation(t *testing.T) {
	f := newFixture(t)
	w := newBatchWriter(t)
	const maxSize, keep, total = 8000, 3, 4000 // lines do not divide the size
	r, pr := f.start(w.process(job.LogRotation{MaxSize: maxSize, Keep: keep}))
	next(t, pr) // running
	w.batch(total)
	w.finish(pr)
	path := f.layout.StdoutLog("job", "writer")
	files := []string{path + ".3", path + ".2", path + ".1", path}
	for i, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > maxSize || (i < keep && st.Size() <= maxSize-lineSize) {
			t.Errorf("%s holds %d bytes, want (%d, %d]", p, st.Size(), maxSize-lineSize, maxSize)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != keep+2 { // the kept files and the stderr log
		t.Errorf("log directory holds %d files, want %d", len(entries), keep+2)
	}
	nums := readLines(t, files...)
	consecutive(t, nums, total)
	if len(nums) < keep*(maxSize/lineSize-1) {
		t.Errorf("only %d lines kept", len(nums))
	}
	if out, errs := r.Dropped(); out != 0 || errs != 0 {
		t.Errorf("dropped %d, %d bytes", out, errs)
	}
}

// TestLogCopytruncate copies and truncates the log under a running writer,
// as logrotate's copytruncate does: the writer goes on at the file's start
// (no hole of zeros where the old end was) and the rotation still works.
func TestLogCopytruncate(t *testing.T) {
	f := newFixture(t)
	w := newBatchWriter(t)
	_, pr := f.start(w.process(job.LogRotation{MaxSize: 16000, Keep: 2}))
	next(t, pr)
	path := f.layout.StdoutLog("job", "writer")
	w.batch(200) // 12.8 KB: no rotation yet
	awaitLine(t, path, line(200))
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	w.batch(10)
	awaitLine(t, path, line(210))
	if nums := readLines(t, path); nums[0] != 201 || len(nums) != 10 {
		t.Fatalf("after the truncation the log holds lines %v, want 201-210 from its start", nums)
	}
	w.batch(1000)
	w.finish(pr)
	copied := filepath.Join(t.TempDir(), "copy")
	if err := os.WriteFile(copied, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path + ".1", path} {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "\x00") || len(b) > 16000 {
			t.Fatalf("%s: %d bytes, zeros: %v", p, len(b), strings.Contains(string(b), "\x00"))
		}
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Fatal("more files kept than asked")
	}
	consecutive(t, readLines(t, copied), 200)
	kept := readLines(t, path+".2", path+".1", path)
	consecutive(t, kept, 1210)
}

// TestLogDirectoryRemoved removes the log directory under a running
// writer: it goes on writing, the lost output is counted and logged, and
// once the directory is back the output goes to a new file there.
func TestLogDirectoryRemoved(t *testing.T) {
	f := newFixture(t)
	w := newBatchWriter(t)
	logs := make(logEvents, 16)
	r, pr := f.start(w.process(job.LogRotation{}), func(o *Options) { o.Log = slog.New(logs) })
	next(t, pr)
	path := f.layout.StdoutLog("job", "writer")
	dir := filepath.Dir(path)
	w.batch(100)
	awaitLine(t, path, line(100))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	w.batch(100) // lines 101-200 have nowhere to go
	logs.await(t, "log writes failing")
	if out, _ := r.Dropped(); out <= 0 {
		t.Fatalf("dropped %d bytes of stdout after the directory went", out)
	}
	// Some of lines 101-200 may still be in the pipe: those reach the new
	// file once the directory is back; the rest are the dropped ones.
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	w.batch(100)
	logs.await(t, "log writes succeed again")
	awaitLine(t, path, line(300))
	nums := readLines(t, path)
	consecutive(t, nums, 300)
	if nums[0] <= 101 || nums[0] > 201 {
		t.Fatalf("the new file starts at line %d, want 102-201", nums[0])
	}
	if out, errs := r.Dropped(); out != int64(nums[0]-101)*lineSize || errs != 0 {
		t.Fatalf("dropped %d, %d bytes; want %d, 0 (lines 101-%d)", out, errs, (nums[0]-101)*lineSize, nums[0]-1)
	}
	w.finish(pr)
}

// TestRotationNeverFollowsPlantedSymlinks plants links where rotated files
// go: the rotation renames over them and never writes through them.
func TestRotationNeverFollowsPlantedSymlinks(t *testing.T) {
	f := newFixture(t)
	w := newBatchWriter(t)
	path := f.layout.StdoutLog("job", "writer")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("untouched\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{".1", ".2", ".3"} {
		if err := os.Symlink(victim, path+n); err != nil {
			t.Fatal(err)
		}
	}
	_, pr := f.start(w.process(job.LogRotation{MaxSize: 4096, Keep: 2}))
	next(t, pr)
	w.batch(500) // about eight rotations
	w.finish(pr)
	if b, _ := os.ReadFile(victim); string(b) != "untouched\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	for _, n := range []string{".1", ".2"} {
		if st, err := os.Lstat(path + n); err != nil || !st.Mode().IsRegular() {
			t.Fatalf("%s after rotations: %v, %v", path+n, st, err)
		}
	}
	consecutive(t, readLines(t, path+".2", path+".1", path), 500)
}

// TestLogRotationFailureIsReported has every rotation fail (a directory
// planted at PATH.1): the output goes on into the file without a line lost,
// each failure is counted and logged with its error, and once the way is
// clear rotation works again, which is logged too.
func TestLogRotationFailureIsReported(t *testing.T) {
	f := newFixture(t)
	w := newBatchWriter(t)
	path := f.layout.StdoutLog("job", "writer")
	if err := os.MkdirAll(path+".1/planted", 0o750); err != nil {
		t.Fatal(err)
	}
	logs := make(logEvents, 64)
	r, pr := f.start(w.process(job.LogRotation{MaxSize: 4096, Keep: 1}), func(o *Options) { o.Log = slog.New(logs) })
	next(t, pr)
	w.batch(500) // 32 KB: a rotation tried every 4 KB
	logs.await(t, "log rotation failed")
	awaitLine(t, path, line(500))
	if n := r.RotationFailures(); n < 1 {
		t.Fatalf("%d rotation failures counted", n)
	}
	consecutive(t, readLines(t, path), 500)
	if err := os.RemoveAll(path + ".1"); err != nil {
		t.Fatal(err)
	}
	w.batch(500)
	logs.await(t, "log rotation succeeds again")
	w.finish(pr)
	if st, err := os.Stat(path); err != nil || st.Size() > 4096 {
		t.Fatalf("after the way was clear: %v, %v", st, err)
	}
	consecutive(t, readLines(t, path+".1", path), 1000)
	if out, errs := r.Dropped(); out != 0 || errs != 0 {
		t.Errorf("dropped %d, %d bytes", out, errs)
	}
}
