// Command vigil supervises the processes of BOSH jobs: it reads each job's
// bpm.yml, runs and restarts the processes, and answers on a local control
// socket. See the README for the commands.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"github.com/vigil-bosh/vigil/procinit"
)

// version is vigil's release, stamped at build time with
// -ldflags "-X main.version=V" (the BOSH release's packaging does); empty
// in a development build. The control API reports it.
var version string

// vigilVersion is version, or "dev" for a development build.
func vigilVersion() string {
	if version == "" {
		return "dev"
	}
	return version
}

const usage = `usage: vigil COMMAND [flags] [args]

Commands:
  daemon [--backend B]          supervise every job's processes (foreground); B: native, systemd, auto
  status [--json]               show every process and configuration problem
  events [--json] [-n N]        stream state changes as they happen (N recent ones first)
  start JOB [-p PROC]           start and wait until running (or failed)
  stop JOB [-p PROC]            stop and wait until nothing is left
  restart JOB [-p PROC]         stop, start and wait
  signal JOB -p PROC SIGNAL     send a signal to a process (e.g. HUP, USR1)
  logs JOB [-p P] [-f] [-n N]   show a job's log files (stdout; -e stderr, -a both), -f follows
  reload                        re-read the jobs; restart only what changed
  demo                          supervise the example jobs in a throwaway root
  lifecycle HOOK                run every job's bin/HOOK in parallel (pre-start ...)
  drain [--shutdown|--update]   run every job's bin/drain with BOSH's protocol
  container [--grace 30s]       a container's entrypoint: PID 1, drains on SIGTERM
  probe live|ready              exit 0 when the daemon is live / every process ready
  bpm COMMAND [args]            answer as bpm 1.4 does (also: run vigil as "bpm")
  monit COMMAND [args]          answer as monit 5.2.5 does (also: run vigil as "monit")
  install                       link ROOT/jobs/bpm/bin/bpm and ROOT/bosh/bin/monit to this binary
  systemd generate [--out DIR]  write a systemd unit per process and a target per job
  exec JOB PROC                 run one process in the foreground (a generated unit's ExecStart)
  version                       print the version

Every command takes --root DIR (default $VIGIL_ROOT, else /var/vcap).
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		os.Exit(procinit.Main()) // the per-process init: see package procinit
	}
	if filepath.Base(os.Args[0]) == "bpm" {
		os.Exit(runBPM(os.Args[1:])) // the bpm personality: see package bpmcli
	}
	if filepath.Base(os.Args[0]) == "monit" {
		os.Exit(runMonit(os.Args[1:])) // the monit personality: see package monitcompat
	}
	err := run(os.Args[1:])
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "vigil:", ee.err)
		}
		os.Exit(ee.code)
	}
	fmt.Fprintln(os.Stderr, "vigil:", err)
	os.Exit(1)
}

// exitError carries an exit code through error wrapping to main.
type exitError struct {
	code int
	err  error // printed when not nil
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format+"\n\n"+usage, args...)}
}

func run(args []string) error {
	if len(args) == 0 {
		return usageError("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "daemon":
		return runDaemon(rest)
	case "status":
		return runStatus(rest)
	case "events":
		return runEvents(rest)
	case "start", "stop", "restart":
		return runAction(cmd, rest)
	case "signal":
		return runSignal(rest)
	case "logs":
		return runLogs(rest)
	case "reload":
		return runReload(rest)
	case "demo":
		return runDemo(rest)
	case "lifecycle":
		return runLifecycle(rest)
	case "drain":
		return runDrain(rest)
	case "container":
		return runContainer(rest)
	case "probe":
		return runProbe(rest)
	case "bpm":
		if code := runBPM(rest); code != 0 {
			return &exitError{code: code}
		}
		return nil
	case "monit":
		if code := runMonit(rest); code != 0 {
			return &exitError{code: code}
		}
		return nil
	case "install":
		return runInstall(rest)
	case "systemd":
		return runSystemd(rest)
	case "exec":
		return runExec(rest)
	case "version", "--version", "-V":
		fmt.Println("vigil", vigilVersion())
		return nil
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	return usageError("unknown command %q", cmd)
}
