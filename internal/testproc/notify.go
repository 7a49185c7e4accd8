package testproc

import (
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// EnvNotifyFD names the fd "notify" writes its readiness line to.
const EnvNotifyFD = "TESTPROC_NOTIFY_FD"

// notify reports "ready PID PPID", then on each SIGUSR1 says it is ready:
// READY=1 to $NOTIFY_SOCKET when set and a newline on $TESTPROC_NOTIFY_FD
// when set, and reports "notified". SIGUSR2 sends WATCHDOG=1 and reports
// "kept". Any other handled signal ends it with exit code 0.
func notify(rep reporter) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2)
	rep.send("ready %d %d", os.Getpid(), os.Getppid())
	for s := range sigs {
		switch s {
		case syscall.SIGUSR1:
			sdNotify("READY=1\nSTATUS=serving")
			if fd, err := strconv.Atoi(os.Getenv(EnvNotifyFD)); err == nil {
				_, _ = syscall.Write(fd, []byte("\n"))
			}
			rep.send("notified")
		case syscall.SIGUSR2:
			sdNotify("WATCHDOG=1")
			rep.send("kept")
		default:
			rep.send("signal %s", signalName(s))
			return 0
		}
	}
	return 0
}

func sdNotify(msg string) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return
	}
	c, err := net.Dial("unixgram", path)
	if err != nil {
		return
	}
	defer c.Close()
	_, _ = c.Write([]byte(msg))
}
