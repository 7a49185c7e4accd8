// Package testproc turns a test binary into the processes that supervision
// tests need: vigil's per-process init (argv[1] == "init") and small child
// programs chosen by the TESTPROC environment variable. Children report what
// happens to them over a unix socket the test listens on, so tests wait on
// events, never on time.
//
// Call Main first thing in TestMain.
package testproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
)

// Environment variables that steer a child.
const (
	EnvBehaviour = "TESTPROC"        // serve, exit, grandchild
	EnvSocket    = "TESTPROC_SOCK"   // where to report
	EnvIgnore    = "TESTPROC_IGNORE" // comma-separated signals to ignore, e.g. TERM,QUIT
	EnvCode      = "TESTPROC_CODE"   // exit code for "exit"
	EnvHold      = "TESTPROC_HOLD"   // "inspect" stays up afterwards until signalled
)

// NoRaceExitDelay is a GORACE value that stops a race-enabled binary from
// sleeping a second at a clean exit; give it to inits and children.
const NoRaceExitDelay = "atexit_sleep_ms=0"

// Main runs the init or a child behaviour and exits when the process is one
// of those; it returns at once in the test binary proper. A behaviour in
// the environment wins over the init's arguments: a child started as
// "BINARY init JOB/PROC" with one set looks like an init and is not one (a
// forged init).
func Main() {
	b := os.Getenv(EnvBehaviour)
	if len(os.Args) > 1 && os.Args[1] == "init" && b == "" {
		os.Exit(procinit.Main())
	}
	if b == "" {
		return
	}
	os.Exit(run(b))
}

func run(behaviour string) int {
	rep := dial()
	switch behaviour {
	case "exit":
		code, _ := strconv.Atoi(os.Getenv(EnvCode))
		rep.send("exiting %d", code)
		return code
	case "grandchild":
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), EnvBehaviour+"=serve", EnvIgnore+"=TERM,QUIT")
		if err := cmd.Start(); err != nil {
			rep.send("error %v", err)
			return 1
		}
		rep.send("grandchild %d", cmd.Process.Pid)
		return serve(rep)
	case "serve":
		return serve(rep)
	}
	if code, ok := more(behaviour, rep); ok {
		return code
	}
	if code, ok := faulty(behaviour, rep); ok {
		return code
	}
	rep.send("error unknown behaviour %q", behaviour)
	return 2
}

// serve reports "ready PID PPID", then reports each signal it gets as
// "signal NAME". USR2 also prints a line to stdout and stderr. Signals not
// listed in TESTPROC_IGNORE end it with exit code 0.
func serve(rep reporter) int {
	ignore := map[string]bool{}
	for _, s := range strings.Split(os.Getenv(EnvIgnore), ",") {
		ignore[s] = true
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP,
		syscall.SIGUSR1, syscall.SIGUSR2)
	fmt.Println("started")
	rep.send("ready %d %d", os.Getpid(), os.Getppid())
	for s := range sigs {
		name := strings.TrimPrefix(signalName(s), "SIG")
		rep.send("signal %s", name)
		switch {
		case name == "USR2":
			fmt.Println("stdout after USR2")
			fmt.Fprintln(os.Stderr, "stderr after USR2")
			rep.send("printed")
		case name == "USR1" || name == "HUP" || ignore[name]:
		default:
			return 0
		}
	}
	return 0
}

func signalName(s os.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGHUP: "SIGHUP", syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
	}
	return names[s.(syscall.Signal)]
}

type reporter struct{ c net.Conn }

func dial() reporter {
	path := os.Getenv(EnvSocket)
	if path == "" {
		return reporter{}
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testproc: report socket: %v\n", err)
		return reporter{}
	}
	return reporter{c}
}

func (r reporter) send(format string, args ...any) {
	if r.c != nil {
		fmt.Fprintf(r.c, "%d "+format+"\n", append([]any{os.Getpid()}, args...)...)
	}
}
