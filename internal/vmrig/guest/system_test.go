package guest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
)

// sh runs a command in the guest and returns its combined output, failing
// the test when it fails.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// write creates a file and its directories.
func write(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// waitEvent reads the daemon's event stream (its recent events first)
// until match accepts one, and returns it. The stream blocks; the
// deadline bounds a scenario that went wrong.
func waitEvent(t *testing.T, sock string, d time.Duration, match func(control.Event) bool) control.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		evs, err := control.NewClient(sock).Events(ctx, 1024)
		if err != nil {
			// the daemon is not up yet: its socket appears when it is
			if !waitPath(ctx, sock) {
				break
			}
			continue
		}
		for ev := range evs {
			if match(ev) {
				return ev
			}
		}
	}
	t.Fatalf("no such event within %s", d)
	return control.Event{}
}

// waitPath waits, by inotify on its directory, until path exists; false
// when ctx ends first.
func waitPath(ctx context.Context, path string) bool {
	for ctx.Err() == nil {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return false
		}
		watchOnce(ctx, filepath.Dir(path))
	}
	return false
}

// status is the daemon's status through its control socket.
func status(t *testing.T, sock string) control.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := control.NewClient(sock).Status(ctx)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

func processOf(st control.Status, job, proc string) (control.ProcessStatus, bool) {
	for _, p := range st.Processes {
		if p.Job == job && p.Process == proc {
			return p, true
		}
	}
	return control.ProcessStatus{}, false
}

// cgroupOf is the unified-hierarchy directory of a process's cgroup.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("cgroup of %d: %v", pid, err)
	}
	path, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "0::")
	if !ok {
		t.Fatalf("cgroup of %d: %q", pid, b)
	}
	return filepath.Join("/sys/fs/cgroup", path)
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// groupsBelow lists the cgroup directories below dir (dir excluded).
func groupsBelow(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// watchOnce returns when something is created in or moved into dir, or
// after a second at most, or when ctx ends.
func watchOnce(ctx context.Context, dir string) {
	watchDir(ctx, dir, unix.IN_CREATE|unix.IN_MOVED_TO)
}

// watchDir returns when inotify reports one of the events of mask in dir,
// or after a second at most, or when ctx ends.
func watchDir(ctx context.Context, dir string, mask uint32) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		return
	}
	if ctx.Err() == nil {
		_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 1000)
	}
}

// exitOf holds pid by a pidfd; the returned function waits until it has
// exited (two minutes at most).
func exitOf(t *testing.T, pid int) func() {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd of %d: %v", pid, err)
	}
	return func() {
		defer unix.Close(fd)
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 120_000)
		if err != nil || n == 0 {
			t.Fatalf("pid %d did not exit: %v", pid, err)
		}
	}
}
