// Command child is the workload process of the benchmark harness.
//
// On start it reads CLOCK_MONOTONIC, connects to the harness's unix socket
// named by BENCH_REPORT and writes "PID START_MONOTONIC_NS\n", so the harness
// learns the real pid and start time without asking the supervisor. It then
// keeps the connection open until it dies: the harness sees the death as EOF
// (and when the harness closes it, at its teardown, the child exits).
//
// Behaviours, chosen by environment:
//   - BENCH_EXIT=1: exit with status 1 right after reporting (crash loop).
//   - BENCH_IGNORE_TERM=1: ignore SIGTERM and the other catchable stop
//     signals (INT, QUIT, HUP, USR1, USR2), writing the signal name ("TERM",
//     "QUIT", ...) on the socket each time one arrives; only SIGKILL ends it.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		os.Exit(3)
	}
	start := ts.Nano()

	var caught chan os.Signal
	if os.Getenv("BENCH_IGNORE_TERM") == "1" {
		// Subscribe before reporting so no signal can slip through.
		caught = make(chan os.Signal, 16)
		signal.Notify(caught, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT,
			syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	}

	conn, err := net.Dial("unix", os.Getenv("BENCH_REPORT"))
	if err != nil {
		// Nobody is listening: the run is over, do not linger.
		os.Exit(2)
	}
	if _, err := fmt.Fprintf(conn, "%d %d\n", os.Getpid(), start); err != nil {
		os.Exit(2)
	}
	if os.Getenv("BENCH_EXIT") == "1" {
		os.Exit(1)
	}
	if caught != nil {
		go func() {
			for s := range caught {
				name := strings.TrimPrefix(unix.SignalName(s.(syscall.Signal)), "SIG")
				// A failed write only means the harness went away; keep
				// running anyway, as a process that ignores TERM would.
				_, _ = fmt.Fprintf(conn, "%s\n", name)
			}
		}()
	}
	// Wait until the harness closes the connection, at its teardown, then
	// leave. The read waits in the runtime's network poller; a bare
	// select {} would be a deadlock to the runtime of a static build
	// (without cgo), which kills the process.
	_, _ = io.Copy(io.Discard, conn)
	os.Exit(2)
}
