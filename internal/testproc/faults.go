package testproc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// EnvGate names the file that releases "gate".
const EnvGate = "TESTPROC_GATE"

// EnvBytes is how much "write" writes.
const EnvBytes = "TESTPROC_BYTES"

// faulty runs the behaviours of the fault-injection tests. It reports
// false for a behaviour it does not know.
//
//   - closeout: closes its stdout, reports "closed", then serves (USR2 still
//     writes to stderr).
//   - flood: reports "flooding", then writes to stdout as fast as it can
//     until it is killed.
//   - write: writes $TESTPROC_BYTES bytes to stdout in 1 KiB lines (the
//     last one shorter), reports "wrote N" and exits 0.
//   - doublefork: starts a grandchild through an intermediate child that
//     exits at once (the grandchild, in a session of its own and ignoring
//     TERM and QUIT, is orphaned), reports "grandchild PID", then serves.
//   - gate: a hook that blocks: reports "hook PID PPID", waits until the
//     file $TESTPROC_GATE exists (on inotify, never on a timer) and exits 0.
func faulty(behaviour string, rep reporter) (int, bool) {
	switch behaviour {
	case "gate":
		rep.send("hook %d %d", os.Getpid(), os.Getppid())
		if err := awaitFile(os.Getenv(EnvGate)); err != nil {
			rep.send("error %v", err)
			return 1, true
		}
		rep.send("released")
		return 0, true
	case "closeout":
		os.Stdout.Close()
		rep.send("closed")
		return serve(rep), true
	case "flood":
		rep.send("flooding")
		line := append(bytes.Repeat([]byte("x"), 1023), '\n')
		buf := bytes.Repeat(line, 64)
		for {
			if _, err := os.Stdout.Write(buf); err != nil {
				rep.send("error %v", err)
				return 1, true
			}
		}
	case "write":
		return write(rep), true
	case "doublefork":
		mid := exec.Command(os.Args[0])
		mid.Env = append(os.Environ(), EnvBehaviour+"=doublefork-mid")
		out, err := mid.Output()
		if err != nil {
			rep.send("error %v", err)
			return 1, true
		}
		rep.send("grandchild %s", bytes.TrimSpace(out))
		return serve(rep), true
	case "doublefork-mid":
		// The intermediate child: start the grandchild, print its pid, exit.
		g := exec.Command(os.Args[0])
		g.Env = append(os.Environ(), EnvBehaviour+"=serve", EnvIgnore+"=TERM,QUIT")
		g.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // stdout: /dev/null, not our pipe
		if err := g.Start(); err != nil {
			return 1, true
		}
		os.Stdout.WriteString(strconv.Itoa(g.Process.Pid) + "\n")
		return 0, true
	}
	return 0, false
}

// awaitFile returns once path exists, woken by inotify events in its
// directory.
func awaitFile(path string) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if _, err := unix.Read(fd, buf); err != nil && err != unix.EINTR {
			return err
		}
	}
}

// write is the "write" behaviour.
func write(rep reporter) int {
	total := atoi(os.Getenv(EnvBytes))
	line := append(bytes.Repeat([]byte("w"), 1023), '\n')
	buf := bytes.Repeat(line, 64)
	for left := total; left > 0; {
		n := min(left, len(buf))
		chunk := buf[:n]
		if n < len(buf) {
			chunk = append(bytes.Repeat([]byte("w"), n-1), '\n')
		}
		if _, err := os.Stdout.Write(chunk); err != nil {
			rep.send("error %v", err)
			return 1
		}
		left -= n
	}
	rep.send("wrote %d", total)
	return 0
}
