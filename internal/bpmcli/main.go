// Package bpmcli is vigil's bpm personality: the vigil binary answers as
// bpm 1.4 does when it is run under the name "bpm" (or as "vigil bpm"), so
// that monit files, drain scripts, errands and operators that call
// /var/vcap/jobs/bpm/bin/bpm keep working. It has bpm's commands, flags,
// output, error texts and exit codes, and container-run's extensions term,
// quit and running.
//
// When a vigil daemon answers on the root's control socket, the commands go
// through its control API and the daemon supervises. Otherwise bpm start
// leaves the process running under a detached per-process init that keeps
// the pid file itself, and the other commands work from the pid files, as
// bpm does under monit.
package bpmcli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/vigil-bosh/vigil/boshpath"
)

// CompatibleVersion is the bpm release whose command line this one keeps.
const CompatibleVersion = "1.4.38"

// Env is what Main takes from the process it runs in, so that tests can
// supply their own.
type Env struct {
	Stdin          io.Reader // given to shell; nil means no input
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Version        string // vigil's version, shown after bpm's; "" in a development build
	Self           string // the vigil binary: re-executed by term, and the init when Init is nil
	// Init, when set, returns the program executed as the per-process
	// init; it is called only by commands that start one.
	Init    func() string
	InitEnv []string // extra environment for the inits (tests)
}

// Main runs one bpm command line (without the program name) and returns
// the exit status: 0 on success, 1 on any error (printed on stderr as
// "Error: MESSAGE"), and for run the process's own exit status.
func Main(args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	err := dispatch(args, env)
	if err == nil {
		return 0
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{code: 1, err: err}
	}
	if ee.usage != "" {
		fmt.Fprint(env.Stderr, ee.usage)
	}
	if ee.err != nil {
		fmt.Fprintf(env.Stderr, "Error: %v\n", ee.err)
	}
	return ee.code
}

// exitError is an error with its exit status and, when usage is set, the
// usage text printed before it.
type exitError struct {
	code  int
	err   error // nil: print nothing
	usage string
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// errNotRunning is bpm's answer when there is no process to act on.
var errNotRunning = errors.New("process is not running or could not be found")

// command is one subcommand.
type command struct {
	name, short string
	flags       []flagSpec
	noJob       bool // takes no job argument
	run         func(c *cli, t target, p parsed) error
}

func processFlag() flagSpec {
	return flagSpec{long: "process", short: 'p', kind: stringFlag, help: "the process name (default: the job name)"}
}

// commands lists the subcommands in the order usage shows them. It is a
// function so that no package-level state exists.
func commands() []command {
	return []command{
		{name: "list", short: "list every process and its state", noJob: true, run: (*cli).list,
			flags: []flagSpec{{long: "json", kind: boolFlag, help: "print JSON"}}},
		{name: "logs", short: "show a process's logs (with tail)", run: (*cli).logs, flags: []flagSpec{processFlag(),
			{long: "all", short: 'a', kind: boolFlag, help: "both the stdout and the stderr log"},
			{long: "err", short: 'e', kind: boolFlag, help: "the stderr log"},
			{long: "follow", short: 'f', kind: boolFlag, help: "keep following the logs"},
			{long: "lines", short: 'n', kind: intFlag, def: "25", help: "how many lines to show"},
			{long: "quiet", short: 'q', kind: boolFlag, help: "no file name headers"}}},
		{name: "pid", short: "print the pid in the pid file", run: (*cli).pid, flags: []flagSpec{processFlag()}},
		{name: "quit", short: "send SIGQUIT to a process", run: (*cli).quit, flags: []flagSpec{processFlag()}},
		{name: "run", short: "run a process in the foreground (errands)", run: (*cli).runForeground, flags: []flagSpec{processFlag(),
			{long: "volume", short: 'v', kind: listFlag, help: "extra volume, <path>[:<options>] (repeatable)"},
			{long: "env", short: 'e', kind: listFlag, help: "extra environment variable, KEY=VALUE (repeatable)"}}},
		{name: "running", short: "print yes and exit 0 if a process runs, else no and exit 1", run: (*cli).running, flags: []flagSpec{processFlag()}},
		{name: "shell", short: "run a shell in a process's environment", run: (*cli).shell, flags: []flagSpec{processFlag()}},
		{name: "start", short: "start a process", run: (*cli).start, flags: []flagSpec{processFlag()}},
		{name: "stop", short: "stop a process and wait until nothing of it is left", run: (*cli).stop, flags: []flagSpec{processFlag()}},
		{name: "term", short: "stop a process without waiting", run: (*cli).term, flags: []flagSpec{processFlag()}},
		{name: "trace", short: "strace a process", run: (*cli).trace, flags: []flagSpec{processFlag()}},
		{name: "version", short: "print the version", noJob: true, run: (*cli).version},
	}
}

func globalFlags() []flagSpec {
	return []flagSpec{
		{long: "help", short: 'h', kind: boolFlag, help: "show this help"},
		{long: "version", kind: boolFlag, help: "print the version"},
	}
}

func dispatch(args []string, env Env) error {
	cmds := commands()
	// The first argument that is not a flag names the command.
	i := slices.IndexFunc(args, func(a string) bool { return !strings.HasPrefix(a, "-") })
	var cmd *command
	if i >= 0 {
		name := args[i]
		if name == "help" {
			fmt.Fprint(env.Stdout, rootUsage(cmds))
			return nil
		}
		j := slices.IndexFunc(cmds, func(c command) bool { return c.name == name })
		if j < 0 {
			return fmt.Errorf("unknown command %q for \"bpm\"", name)
		}
		cmd = &cmds[j]
		args = slices.Delete(slices.Clone(args), i, i+1)
	}
	specs := globalFlags()
	usage := rootUsage(cmds)
	if cmd != nil {
		specs = append(slices.Clone(cmd.flags), globalFlags()...)
		usage = commandUsage(*cmd)
	}
	p, err := parseFlags(specs, args)
	switch {
	case err != nil:
		return &exitError{code: 1, err: err, usage: usage}
	case p.bool("version"):
		fmt.Fprintln(env.Stdout, versionString(env))
		return nil
	case p.bool("help"):
		fmt.Fprint(env.Stdout, usage)
		return nil
	}
	l, err := boshpath.Resolve("", env.Getenv, "BPM_BOSH_ROOT", "VIGIL_ROOT")
	if err != nil {
		return err
	}
	// bpm refuses to run unless root. Only on the real root, so that tests
	// and demos under a throwaway root run as anyone.
	if l.Root() == boshpath.DefaultRoot && os.Getuid() != 0 && os.Getgid() != 0 {
		return errors.New("bpm must be run as root. Please run 'sudo -i' to become the root user.")
	}
	if cmd == nil {
		return &exitError{code: 1, err: errors.New("Exit code 1"), usage: usage}
	}
	c := &cli{env: env, layout: l}
	if cmd.noJob {
		if cmd.name == "version" && len(p.pos) > 0 {
			return &exitError{code: 1, err: fmt.Errorf("unknown command %q for \"bpm version\"", p.pos[0]), usage: usage}
		}
		return cmd.run(c, target{}, p)
	}
	if len(p.pos) == 0 {
		return &exitError{code: 1, err: errors.New("must specify a job"), usage: usage}
	}
	t := target{job: p.pos[0], proc: p.str("process")}
	if t.proc == "" {
		t.proc = t.job
	}
	if err := boshpath.CheckName(t.job); err != nil {
		return fmt.Errorf("invalid job name: %w", err)
	}
	if err := boshpath.CheckName(t.proc); err != nil {
		return fmt.Errorf("invalid process name: %w", err)
	}
	return cmd.run(c, t, p)
}

// devBuild is what bpm version prints for a binary built without a
// version, as bpm's own development builds do.
const devBuild = "[DEV BUILD]"

// versionString is bpm's version line: bpm's release followed by vigil's
// as semver build metadata (1.4.38+vigil.V), so that a script comparing it
// with bpm versions reads the bpm it is compatible with; "[DEV BUILD]" for
// a binary no release stamped, exactly as bpm prints for its own.
func versionString(env Env) string {
	if env.Version == "" {
		return devBuild
	}
	return CompatibleVersion + "+vigil." + env.Version
}

func (c *cli) version(target, parsed) error {
	fmt.Fprintln(c.env.Stdout, versionString(c.env))
	return nil
}

func rootUsage(cmds []command) string {
	var b strings.Builder
	b.WriteString("bpm (vigil): start, stop and inspect the processes of BOSH jobs\n\n")
	b.WriteString("Usage:\n  bpm [command] <job-name> [flags]\n\nAvailable Commands:\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.short)
	}
	b.WriteString("\nFlags:\n")
	writeFlags(&b, globalFlags())
	b.WriteString("\nUse \"bpm [command] --help\" for more information about a command.\n")
	return b.String()
}

func commandUsage(c command) string {
	var b strings.Builder
	arg := " <job-name>"
	if c.noJob {
		arg = ""
	}
	fmt.Fprintf(&b, "Usage:\n  bpm %s%s [flags]\n\nFlags:\n", c.name, arg)
	writeFlags(&b, append(slices.Clone(c.flags), globalFlags()...))
	return b.String()
}

func writeFlags(b *strings.Builder, specs []flagSpec) {
	for _, s := range specs {
		short := "    "
		if s.short != 0 {
			short = "-" + string(s.short) + ", "
		}
		val := map[flagKind]string{stringFlag: " string", intFlag: " int", listFlag: " stringArray"}[s.kind]
		help := s.help
		if s.def != "" {
			help += " (default " + s.def + ")"
		}
		fmt.Fprintf(b, "  %s--%-18s %s\n", short, s.long+val, help)
	}
}
