package logtail

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// following runs Follow on path in the background and hands its lines over
// a channel. Stopping it cancels Follow and returns its error.
type following struct {
	lines chan string
	done  chan error
	stop  context.CancelFunc
}

func follow(t *testing.T, path string, from int64) *following {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	fl := &following{lines: make(chan string, 1024), done: make(chan error, 1), stop: cancel}
	ready := make(chan struct{})
	go func() {
		close(ready)
		fl.done <- Follow(ctx, path, from, func(l string) error { fl.lines <- l; return nil })
	}()
	<-ready
	t.Cleanup(func() { cancel(); <-fl.done })
	return fl
}

// expect waits for the next lines, in order. The timer is a failure guard.
func (fl *following) expect(t *testing.T, want ...string) {
	t.Helper()
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	for _, w := range want {
		select {
		case got := <-fl.lines:
			if got != w {
				t.Fatalf("line %q, want %q", got, w)
			}
		case err := <-fl.done:
			t.Fatalf("Follow ended (%v) waiting for %q", err, w)
		case <-guard.C:
			t.Fatalf("no line %q within %s", w, testproc.Guard)
		}
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// A marker line, written after Follow has surely started (it is the first
// thing received), orders what the test writes against the follower's start.
func TestFollowFromOffsets(t *testing.T) {
	path := writeFile(t, "old1\nold2\n")
	all := follow(t, path, 0)
	all.expect(t, "old1", "old2")
	mid := follow(t, path, 5)
	mid.expect(t, "old2")
	appendTo(t, path, "new1\n")
	all.expect(t, "new1")
	mid.expect(t, "new1")
}

func TestFollowFromEndSkipsOldLines(t *testing.T) {
	path := writeFile(t, "old\n")
	// Grow the file until the follower, started at its end, has seen a
	// line: it never sees "old", and from its first line on it sees all.
	fl := follow(t, path, -1)
	first := -1
	guard := time.NewTimer(testproc.Guard)
	defer guard.Stop()
	for i := 0; first < 0; i++ {
		appendTo(t, path, strconv.Itoa(i)+"\n")
		select {
		case l := <-fl.lines:
			if first, _ = strconv.Atoi(l); l == "old" {
				t.Fatal(`follower from the end saw "old"`)
			}
		case <-guard.C:
			t.Fatal("no line")
		default:
		}
	}
	appendTo(t, path, "last\n")
	for i := first + 1; ; i++ {
		l := <-fl.lines
		if l == "last" {
			break
		}
		if l != strconv.Itoa(i) {
			t.Fatalf("line %q, want %d", l, i)
		}
	}
}

func TestFollowPartialLineWaitsForNewline(t *testing.T) {
	path := writeFile(t, "")
	fl := follow(t, path, 0)
	appendTo(t, path, "hel")
	appendTo(t, path, "lo\n\nworld\n")
	fl.expect(t, "hello", "", "world")
}

func TestFollowMissingFileThenCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "late.log")
	fl := follow(t, path, 0) // from the start, whenever Follow first sees it
	appendTo(t, path, "first\n")
	fl.expect(t, "first")
}

// A rotation by rename: the writer still writes the renamed file until it
// reopens; those lines come before the new file's.
func TestFollowRotationByRename(t *testing.T) {
	path := writeFile(t, "")
	fl := follow(t, path, 0)
	old, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	old.WriteString("a\n")
	fl.expect(t, "a")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	old.WriteString("b\npartial")
	fl.expect(t, "b")
	appendTo(t, path, "c\n")
	fl.expect(t, "partial", "c")
	// A second rotation, with nothing written in between.
	if err := os.Rename(path, path+".2"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "d\n")
	fl.expect(t, "d")
}

// logrotate's copytruncate: the file shrinks under the follower, which goes
// on from its start.
func TestFollowTruncation(t *testing.T) {
	path := writeFile(t, "")
	fl := follow(t, path, 0)
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("first line\nsecond line\n")
	fl.expect(t, "first line", "second line")
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	w.WriteString("x\n")
	fl.expect(t, "x")
	w.WriteString("y\n")
	fl.expect(t, "y")
}

func TestFollowLongLineInPieces(t *testing.T) {
	path := writeFile(t, "")
	fl := follow(t, path, 0)
	long := strings.Repeat("z", 2*MaxLine+10)
	appendTo(t, path, long+"\nend\n")
	fl.expect(t, long[:MaxLine], long[MaxLine:2*MaxLine], long[2*MaxLine:], "end")
}

func TestFollowEndsWithContext(t *testing.T) {
	path := writeFile(t, "a\n")
	fl := follow(t, path, 0)
	fl.expect(t, "a")
	fl.stop()
	if err := <-fl.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow returned %v, want context.Canceled", err)
	}
	fl.done <- nil // for the cleanup
}

func TestFollowEmitErrorEndsIt(t *testing.T) {
	path := writeFile(t, "a\nb\n")
	boom := errors.New("boom")
	var got []string
	err := Follow(context.Background(), path, 0, func(l string) error {
		got = append(got, l)
		return boom
	})
	if !errors.Is(err, boom) || !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("Follow = %v after %q", err, got)
	}
}

func TestFollowDirectoryRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.log")
	appendTo(t, path, "a\n")
	fl := follow(t, path, 0)
	fl.expect(t, "a")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := <-fl.done; err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("Follow returned %v after its directory went", err)
	}
	fl.done <- nil
}

func TestFollowMissingDirectory(t *testing.T) {
	err := Follow(context.Background(), filepath.Join(t.TempDir(), "no", "x.log"), 0, func(string) error { return nil })
	if err == nil {
		t.Fatal("Follow of a path in a missing directory succeeded")
	}
}

// FuzzPush feeds content in arbitrary pieces and checks the lines match a
// plain split, whatever the chunking.
func FuzzPush(f *testing.F) {
	f.Add("a\nb\n", uint8(1))
	f.Add("\n\n", uint8(3))
	f.Add("no newline", uint8(2))
	f.Fuzz(func(t *testing.T, content string, step uint8) {
		var got []string
		fw := &follower{emit: func(l string) error { got = append(got, l); return nil }}
		b := []byte(content)
		for n := max(int(step), 1); len(b) > 0; b = b[min(n, len(b)):] {
			if err := fw.push(b[:min(n, len(b))]); err != nil {
				t.Fatal(err)
			}
		}
		_ = fw.flush()
		var want []string
		if content != "" {
			want = strings.Split(strings.TrimSuffix(content, "\n"), "\n")
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("lines %q, want %q", got, want)
		}
	})
}

// An offset past the end means the file was truncated since it was taken:
// Follow reads from the start.
func TestFollowFromPastTheEnd(t *testing.T) {
	path := writeFile(t, "new\n")
	fl := follow(t, path, 100)
	fl.expect(t, "new")
}

// Tail and Follow together, with the file growing in between: no line is
// lost or shown twice.
func TestTailThenFollow(t *testing.T) {
	path := writeFile(t, "1\n2\n")
	lines, end, err := Tail(path, 5, 100)
	if err != nil || len(lines) != 2 {
		t.Fatalf("Tail = %q, %v", lines, err)
	}
	appendTo(t, path, "3\n")
	fl := follow(t, path, end)
	appendTo(t, path, "4\n")
	fl.expect(t, "3", "4")
}

func TestAwait(t *testing.T) {
	path := writeFile(t, "a\nb\n")
	if err := Await(context.Background(), path, 0, "b"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Await(context.Background(), path, 0, "c") }()
	appendTo(t, path, "x\nc\n")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Await(ctx, path, 0, "never"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await with a cancelled context: %v", err)
	}
}
