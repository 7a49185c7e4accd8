package testproc

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// WaitUntil blocks until cond holds, checking it again at each inotify
// event in dir (created if missing: a file appearing, changing or being
// renamed into it), never on a timer. Guard bounds the wait between events,
// as a failure guard only.
func WaitUntil(t testing.TB, dir string, cond func() bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MODIFY|unix.IN_MOVED_TO); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for !cond() {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(Guard.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue // a signal (the runtime's, a child's end): wait again
		}
		if n < 1 {
			t.Fatalf("nothing changed in %s within %s (%v)", dir, Guard, err)
		}
		if _, err := unix.Read(fd, buf); err != nil {
			t.Fatal(err)
		}
	}
}

// FileHolds reports whether the file at path holds exactly want.
func FileHolds(path, want string) func() bool {
	return func() bool { b, _ := os.ReadFile(path); return string(b) == want }
}

// FileEndsWith reports whether the file at path ends with suffix.
func FileEndsWith(path, suffix string) func() bool {
	return func() bool { b, _ := os.ReadFile(path); return strings.HasSuffix(string(b), suffix) }
}

// FileContains reports whether the file at path contains s.
func FileContains(path, s string) func() bool {
	return func() bool { b, _ := os.ReadFile(path); return strings.Contains(string(b), s) }
}
