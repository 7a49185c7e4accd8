package main

import (
	"fmt"
	"os"
)

// commands is vigil's command line, in the order help lists it. It is a
// function so that no package-level state exists.
func commands() []spec {
	return []spec{
		{name: "daemon", summary: "supervise every job's processes, in the foreground",
			about: `Supervise the processes of every job of the BOSH root (or of --jobs), in the foreground, until SIGTERM or SIGINT, which stop every process and exit 0 once none is left. SIGHUP makes every process reopen its log files.

The daemon refuses to start when the root is missing or the chosen back end cannot run here, saying why.`,
			exits:  []exitStatus{{exitFailed, "the daemon could not start (the root is missing, the back end cannot run here, the control socket cannot be served) or did not stop cleanly"}},
			define: defineDaemon},
		{name: "status", args: "[JOB[/PROC]...]", summary: "show the processes and the configuration problems",
			about: `Show every supervised process (or those named: a job, or JOB/PROC, or -p PROC with one job) with its state, health and readiness, pid, uptime, restarts, memory, CPU and last exit, then the configuration problems and warnings.

The exit status is 3 when a process that should run (wanted up and monitored) does not, or when the configuration (of the jobs named) has errors, as systemctl status does.`,
			ok: "every process that should run runs, and the configuration (of the jobs named) has no errors",
			exits: []exitStatus{
				{exitNotRunning, "a process that should run does not run, a job or process named is configured but not supervised (monit files leave it out), or the configuration (of the jobs named) has errors"},
				{exitUnknown, "no such job or process (the closest name is suggested, or the names listed)"},
				common(exitNoDaemon)},
			define: defineStatus, complete: []string{completeJobProc}},
		{name: "top", summary: "a live view of every process: start, stop, restart, logs",
			about: `Show every process in the terminal, live: state, health and readiness, pid, uptime, restarts, CPU (the share of one CPU over the last second), memory and last exit, redrawn at each event the daemon streams (and each second, for CPU, memory and the uptimes).

Keys: up and down (or k and j), page up and down, g and G move the selection; s starts the selected process, x stops it and r restarts it (each asks first but start; S, X and R act on its whole job); l or enter shows its logs, followed (q or esc comes back); / filters by JOB/PROC or state (enter keeps the filter, esc clears it); o changes the order (name, state, CPU, memory, restarts, uptime); q or Ctrl-C quits. The screen fits 80 columns and grows with the terminal; NO_COLOR turns the colours off. The terminal is left as it was found, also on SIGTERM, SIGINT and SIGHUP.`,
			ok:     "quit (q, Ctrl-C, SIGTERM, SIGINT or SIGHUP)",
			exits:  []exitStatus{{exitFailed, "standard input or output is not a terminal, or the daemon went away"}, common(exitNoDaemon)},
			define: defineTop},
		{name: "events", summary: "stream state changes as they happen",
			about:  `Print the daemon's events, one line each, as they happen, until Ctrl-C (exit 0) or until the daemon goes away (exit 1): starts, restarts, exits, backoffs, stops and each escalation of the stop ladder, probe results, health and readiness changes, configuration errors.`,
			ok:     "ended by Ctrl-C",
			exits:  []exitStatus{{exitFailed, "the daemon went away, or its stream broke"}, common(exitNoDaemon)},
			define: defineEvents},
		{name: "start", args: "JOB|all", summary: "start a job's processes and wait until they run (and are ready)",
			about:  actionAbout("Start", "are ready: running, up for --uptime without an exit, and past their startup and readiness probes where they have them"),
			exits:  actionExits("a process did not start: it exited, failed or gave up on the way (its last exit and log lines are printed)", true),
			define: defineAction("start"), complete: []string{completeJobAll}},
		{name: "stop", args: "JOB|all", summary: "stop a job's processes and wait until nothing is left",
			about: `Stop the processes of JOB (or one, with -p; or of every job, with all or --all, all at once) through the stop ladder (the shutdown signal, SIGQUIT 15 s later, SIGKILL to the whole tree 2 s after that) and wait until nothing of them is left. On a terminal each step of the ladder is shown as it happens. The processes stay stopped until a start, also across a daemon restart.`,
			exits: actionExits("a process did not stop", false), define: defineAction("stop"), complete: []string{completeJobAll}},
		{name: "restart", args: "JOB|all", summary: "stop and start a job's processes, and wait as start does",
			about:  actionAbout("Restart", "are ready again, as start waits"),
			exits:  actionExits("a process did not start again: it exited, failed or gave up on the way (its last exit and log lines are printed)", true),
			define: defineAction("restart"), complete: []string{completeJobAll}},
		{name: "signal", args: "JOB SIGNAL", summary: "send a signal to a process",
			about:  `Send SIGNAL (a name such as HUP, SIGUSR1, or a number) to the process -p names: it goes to the pid-file process, vigil's init, which forwards it to the executable.`,
			exits:  []exitStatus{{exitFailed, "the signal could not be sent (the process does not run)"}, common(exitNotFound), common(exitConfig), common(exitNoDaemon)},
			define: defineSignal, complete: []string{completeJob, completeSignal}},
		{name: "logs", args: "JOB", summary: "show a job's log files; -f follows them",
			about: `Print the last lines of a job's log files (every process, or -p's; stdout, or -e stderr, or -a both), then with -f the lines written afterwards, until Ctrl-C. It reads the files directly, so it works without a daemon, as bpm logs does. Without -f, several files are told apart by a "==> PATH <==" header before each block; with -f, by a JOB/PROC prefix on each line.`,
			ok:    "the lines were printed (with -f: until Ctrl-C)",
			exits: []exitStatus{
				{exitFailed, "the job's log files do not exist (logs not found), or could not be read"},
				{exitUnknown, "no such job or process: no bpm.yml and no log files name it (the closest name is suggested, or the names listed)"}},
			define: defineLogs, complete: []string{completeJob}},
		{name: "reload", summary: "re-read the jobs: restart only what changed",
			about:  `Re-read every job's configuration: processes of new jobs start, removed ones stop, changed ones restart, unchanged ones are left alone. A job whose new configuration is invalid keeps running with its previous one, and the exit status is 1, naming it. With --dry-run nothing is done: the plan (what would start, stop and restart) is printed.`,
			exits:  []exitStatus{{exitFailed, "a job's configuration was rejected (each keeps what it runs), or the configuration has errors"}, common(exitNoDaemon)},
			define: defineReload},
		{name: "check", args: "[PATH...]", summary: "validate bpm.yml files, job directories and monit files, offline",
			about: `Validate configuration without a daemon, with the daemon's own file:line:field errors and warnings. Without PATH, the root's jobs as the daemon would load them: every bpm.yml (executables included), the monit control files and the dependencies between jobs. Each PATH is a bpm.yml file, a monit control file, or a job directory (its config/bpm.yml and its monit file); those are checked on their own, their executables only with --executables (they name paths of the target machine).

The exit status is 1 when there are errors (with --strict, warnings too), for a CI to use.`,
			ok:     "no errors (with --strict, no warnings either)",
			exits:  []exitStatus{{exitFailed, "errors were found (with --strict, warnings too), or a PATH could not be read"}},
			define: defineCheck, complete: []string{completeFile + "..."}},
		{name: "demo", summary: "supervise the example jobs in a throwaway root",
			about: `Render the example jobs into a throwaway BOSH root, supervise them and show their status until Ctrl-C, with the status page on a free loopback port.`,
			ok:    "ended by Ctrl-C", noRoot: true,
			exits:  []exitStatus{{exitFailed, "the demo could not start: its root, the daemon or the page (--http)"}},
			define: defineDemo},
		{name: "lifecycle", args: "HOOK", summary: "run every job's bin/HOOK in parallel (pre-start, post-start, ...)",
			about: `Run every job's bin/HOOK (pre-start, post-start, pre-stop, post-deploy) as the BOSH agent does: all jobs at once, output appended to ROOT/sys/log/JOB/HOOK.{stdout,stderr}.log, with an optional time limit the agent lacks.`,
			exits: []exitStatus{{exitFailed, "a job's script failed, or ran out of --timeout"}}, define: defineLifecycle, complete: []string{completeHook}},
		{name: "drain", summary: "run every job's bin/drain with BOSH's protocol",
			about: `Unmonitor the processes, then run every job's bin/drain with BOSH's protocol (an integer on stdout; a negative one means "call again with job_check_status"). Under vigil container the daemon runs the drains itself, once per termination, whether a preStop hook or SIGTERM asks first; this command then asks it and waits. With --wait-all it is a pod's preStop hook: it marks this container drained, failed or not, waits until every container of the pod has, then exits with the drains' outcome.`,
			exits: []exitStatus{{exitFailed, "a drain script failed or ran out of --budget, or the daemon's drain failed (with --wait-all: once the pod's other containers have drained)"}}, define: defineDrain},
		{name: "container", summary: "a container's entrypoint: PID 1, drains on termination",
			about: `Be a container's entrypoint (Kubernetes): PID 1 reaping every orphan, the daemon below it, the drains exactly once per termination before any process gets a signal, and every process stopped within --grace. --probes serves read-only /livez and /readyz for the kubelet; --console copies each process's output to the container's stdout and stderr, each line prefixed with JOB/PROC.`,
			ok:    "every process stopped after a SIGTERM or SIGINT",
			exits: []exitStatus{{exitFailed, "the daemon could not start or stop cleanly, or a drain failed"}}, define: defineContainer},
		{name: "image", args: "NAME:TAG", summary: "write a container image of vigil and the root's jobs, without an engine",
			about: `Write a container image (one tar archive that docker load, podman load, ctr images import and skopeo read) holding --base's root filesystem, this vigil at /usr/local/bin/vigil (also as /var/vcap/jobs/bpm/bin/bpm, where drain scripts call bpm) and the BOSH root's rendered jobs at /var/vcap (without its sys and store; owned root:vcap as on a VM, sys, data and store writable by vcap), with a vcap user (uid 1000) added to /etc/passwd and /etc/group when the base has none. Its command is vigil container --root /var/vcap. The same inputs give the same image, digest for digest.`,
			ok:    "the archive was written",
			exits: []exitStatus{{exitFailed, "the root, the base or the vigil binary could not be read, or the archive written"}}, define: defineImage},
		{name: "probe", args: "live|ready", summary: "exit 0 when the daemon is live, or every process ready",
			about:  `Answer a kubelet exec probe: live when the daemon answers; ready when every process that should run runs and is ready, and no drain has begun.`,
			ok:     "live: the daemon answers; ready: every process that should run runs and is ready",
			exits:  []exitStatus{{exitNotRunning, "not ready: a process that should run does not run or is not ready, a drain has begun, or the daemon did not answer within --timeout"}, common(exitNoDaemon)},
			define: defineProbe, complete: []string{"live|ready"}},
		{name: "bpm", args: "COMMAND [args]", summary: "answer as bpm 1.4 does (also: run vigil as \"bpm\")",
			about: `Answer as bpm 1.4 does, with bpm's commands, flags, texts and exit codes (run vigil bpm --help). --root DIR may be given anywhere before a "--"; it overrides BPM_BOSH_ROOT and VIGIL_ROOT.`,
			own:   runBPMCommand},
		{name: "monit", args: "[args]", summary: "answer as monit 5.2.5 does (also: run vigil as \"monit\")",
			about: `Answer as monit 5.2.5 does, with monit's options, texts and exit codes (run vigil monit -h). --root DIR may be given anywhere; it overrides VIGIL_ROOT.`,
			own:   runMonitCommand},
		{name: "monit-service", summary: "the systemd stemcell's monit.service: reload the daemon, then wait for SIGTERM",
			about:  `The one process of the stemcell's monit.service beside vigil.service, which holds the jobs. The BOSH agent reloads monit with systemctl kill monit and systemctl start monit and waits for the monit API's incarnation to change: at its start this asks the daemon to re-read the control files (a reload, which makes a new incarnation), tells systemd it is ready once the daemon has answered (monit.service is Type=notify, so the agent's start returns with the new incarnation in force), then waits for SIGTERM or SIGINT and exits 0. It never signals or stops a job. A daemon that does not answer yet is waited for up to --wait; then it fails, and systemd starts it again.`,
			ok:     "stopped by SIGTERM or SIGINT after the reload",
			exits:  []exitStatus{{exitNoDaemon, "no daemon answered within --wait"}},
			define: defineMonitService},
		{name: "install", summary: "make ROOT/jobs/bpm/bin/bpm and ROOT/bosh/bin/monit this binary",
			about: `Link ROOT/jobs/bpm/bin/bpm and ROOT/bosh/bin/monit to this binary, so that scripts and the BOSH agent find bpm and monit at their usual paths. Running it again changes nothing. What it replaces (a link to another binary, or with --force a real file) is kept as PATH.before-vigil, which uninstall puts back.`,
			exits: []exitStatus{{exitFailed, "a link could not be made (a real bpm or monit is in the way without --force)"}}, define: defineInstall},
		{name: "uninstall", summary: "undo install: remove the links, put back what they replaced",
			about: `Remove the links install made (only links to a vigil binary) and put back what they replaced (PATH.before-vigil).`,
			exits: []exitStatus{{exitFailed, "a link could not be removed, or what it replaced put back"}}, define: defineUninstall},
		{name: "systemd generate", summary: "write a systemd unit per process and a target per job",
			about: `Translate every job into systemd units (vigil-JOB-PROC.service, vigil-JOB.target), written idempotently into --out; only files vigil generated are ever replaced or removed. A job whose bpm.yml is invalid keeps its units as they were, and the exit status is 1.`,
			exits: []exitStatus{{exitFailed, "a job's bpm.yml is invalid (its units are left as they were), or a unit could not be written"}}, define: defineGenerate},
		{name: "exec", args: "JOB PROC", summary: "run one process in the foreground (a generated unit's ExecStart)",
			about:  `Run one process under vigil's init in the foreground, stopped with bpm's ladder on SIGTERM or SIGINT: the ExecStart of a unit vigil systemd generate wrote. It exits with the process's status.`,
			ok:     "the process exited 0 (otherwise its own status: its code, or 128+N for signal N)",
			exits:  []exitStatus{{exitFailed, "the process could not start (no such job or process, an invalid bpm.yml), or it exited 1"}},
			define: defineExec, complete: []string{completeJob, completeProcess}},
		{name: "completion", args: "bash|zsh|fish", summary: "print the shell completion script",
			about:  `Print the completion script for bash, zsh or fish. Load it with: source <(vigil completion bash) in ~/.bashrc; vigil completion zsh > "${fpath[1]}/_vigil"; vigil completion fish > ~/.config/fish/completions/vigil.fish. The scripts ask vigil itself for the candidates, so they always match this binary's commands and the root's jobs.`,
			noRoot: true, define: defineCompletion, complete: []string{"bash|zsh|fish"}},
		{name: "man", summary: "print the manual page (roff)",
			about:  `Print vigil's manual page in roff (man -l <(vigil man) to read it; vigil man > /usr/share/man/man8/vigil.8 to install it).`,
			noRoot: true, define: defineMan},
		{name: "version", summary: "print the version",
			about: `Print vigil's version.`, noRoot: true, define: defineVersion},
		{name: "help", args: "[COMMAND [SUBCOMMAND]]", summary: "show the commands, or a command's help",
			about: `Show every command, or the help of one.`, noRoot: true, define: defineHelp, complete: []string{completeCommand}},
		{name: "__complete", hidden: true, own: runComplete,
			about: `The candidates for the word being completed (the last argument) after the words before it: what the completion scripts ask.`},
	}
}

// actionExits are the exit statuses of start, stop and restart: failed
// says what 1 means; waits, whether it has --timeout (124).
func actionExits(failed string, waits bool) []exitStatus {
	out := []exitStatus{{exitFailed, failed}, common(exitNotFound), common(exitConfig), common(exitNoDaemon), common(exitInterrupted)}
	if waits {
		out = append(out, exitStatus{exitTimeout, "--timeout ran out before the processes were up (and ready): the daemon goes on with the start"})
	}
	return out
}

func actionAbout(verb, until string) string {
	return verb + ` the processes of JOB (or one, with -p; or of every job, with all or --all, all at once) and wait until they ` + until + `. On a failure the exit status is 1 and the last exit and the last lines of each failed process's logs are printed. Ctrl-C stops the waiting, not the action: the daemon goes on.

--wait running waits for running and up for --uptime only; --wait none returns as soon as the daemon has the command.`
}

// visibleCommands are the commands help, completion and the man page show.
func visibleCommands() []spec {
	var out []spec
	for _, s := range commands() {
		if !s.hidden {
			out = append(out, s)
		}
	}
	return out
}

func defineVersion(c *command) func([]string) error {
	asJSON := c.Bool("json", "print JSON")
	return func(pos []string) error {
		if *asJSON {
			return writeJSON(os.Stdout, struct {
				Version string `json:"version"`
			}{vigilVersion()})
		}
		fmt.Println("vigil", vigilVersion())
		return nil
	}
}

func defineHelp(c *command) func([]string) error {
	return func(pos []string) error {
		if len(pos) == 0 {
			writeCommandList(os.Stdout)
			return nil
		}
		s, rest := lookup(pos)
		if s == nil || s.hidden || len(rest) > 0 {
			return c.usagef("no command %q", pos[0])
		}
		if s.own != nil {
			return s.own([]string{"--help"})
		}
		writeHelp(os.Stdout, s.defined())
		return nil
	}
}
