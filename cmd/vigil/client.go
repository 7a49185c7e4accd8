package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
	"github.com/vigil-bosh/vigil/internal/suggest"
)

// connect returns a client for the daemon of c's root.
func connect(c *command) (*control.Client, error) {
	l, err := c.layout()
	if err != nil {
		return nil, err
	}
	return control.NewClient(l.ControlSocket()), nil
}

// interruptible is a context that ends on SIGINT or SIGTERM, so that a
// waiting client can be abandoned; the daemon finishes the action anyway.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func defineStatus(c *command) func([]string) error {
	asJSON := c.Bool("json", "print JSON")
	procName := c.String("p,process", "", "only the process `PROC` of the one JOB named")
	c.completes(completeProcess)
	return func(pos []string) error {
		sel, err := selectors(pos, *procName)
		if err != nil {
			return c.usagef("%v", err)
		}
		client, err := connect(c)
		if err != nil {
			return err
		}
		// No Ctrl-C handler: nothing waits here, and registering one
		// costs a status about 0.3 ms of its 4.
		st, err := client.Status(context.Background())
		if err != nil {
			return err
		}
		if st, err = sel.filter(st); err != nil {
			return err
		}
		if *asJSON {
			if err := writeJSON(os.Stdout, st); err != nil {
				return err
			}
		} else {
			// One write for the table, not one per cell: a status of 100
			// processes was 200 write calls.
			out := bufio.NewWriter(os.Stdout)
			writeStatus(out, st, isTerminal(os.Stdout))
			if err := out.Flush(); err != nil {
				return err
			}
		}
		if notRunning(st) {
			return &exitError{code: exitNotRunning}
		}
		return nil
	}
}

// selector names a job, or one of its processes.
type selector struct{ job, proc string }

type selection []selector

// selectors reads status's arguments: JOB or JOB/PROC each, or one JOB
// with -p PROC.
func selectors(pos []string, proc string) (selection, error) {
	if proc != "" && len(pos) != 1 {
		return nil, fmt.Errorf("-p needs exactly one JOB")
	}
	var sel selection
	for _, a := range pos {
		job, p, _ := strings.Cut(a, "/")
		if job == "" || (strings.Contains(a, "/") && p == "") {
			return nil, fmt.Errorf("%q: want JOB or JOB/PROC", a)
		}
		if proc != "" {
			p = proc
		}
		sel = append(sel, selector{job, p})
	}
	return sel, nil
}

// filter keeps what the selection names: its processes, and the problems
// of its jobs. A selector that names nothing is an error: exit 3 for a
// job or process its bpm.yml defines and nothing supervises (monit files
// leave it out), else no such job or process (4), with the closest name.
func (sel selection) filter(st control.Status) (control.Status, error) {
	if len(sel) == 0 {
		return st, nil
	}
	all, allProbs := st.Processes, st.Problems
	st.Processes, st.Problems = nil, nil
	for _, p := range all {
		if slices.ContainsFunc(sel, func(s selector) bool { return s.job == p.Job && (s.proc == "" || s.proc == p.Process) }) {
			st.Processes = append(st.Processes, p)
		}
	}
	for _, p := range allProbs {
		if slices.ContainsFunc(sel, func(s selector) bool { return s.job == p.Job }) {
			st.Problems = append(st.Problems, p)
		}
	}
	for _, s := range sel {
		if slices.ContainsFunc(st.Processes, func(p control.ProcessStatus) bool {
			return p.Job == s.job && (s.proc == "" || p.Process == s.proc)
		}) {
			continue
		}
		if i := slices.IndexFunc(st.Problems, func(p control.Problem) bool {
			return p.Job == s.job && p.Kind == control.ProblemUnsupervised && (p.Process == "" || p.Process == s.proc)
		}); i >= 0 {
			return st, exitWith(exitNotRunning, errors.New(backend.ProblemText(st.Problems[i])))
		}
		if s.proc == "" && slices.ContainsFunc(st.Problems, func(p control.Problem) bool { return p.Job == s.job }) {
			continue // a job that failed to load: its problems say why
		}
		if s.proc == "" {
			return st, exitWith(exitUnknown, fmt.Errorf("no job %s is supervised or configured%s", s.job,
				suggest.Phrase(s.job, jobsOf(all, allProbs), "jobs")))
		}
		var procs []string
		for _, p := range all {
			if p.Job == s.job {
				procs = append(procs, p.Process)
			}
		}
		return st, exitWith(exitUnknown, fmt.Errorf("no process %s/%s is supervised%s", s.job, s.proc,
			suggest.Phrase(s.proc, procs, "processes of "+s.job)))
	}
	return st, nil
}

// jobsOf names the jobs a status shows, by their processes or problems.
func jobsOf(ps []control.ProcessStatus, probs []control.Problem) []string {
	var out []string
	add := func(j string) {
		if j != "" && !slices.Contains(out, j) {
			out = append(out, j)
		}
	}
	for _, p := range ps {
		add(p.Job)
	}
	for _, p := range probs {
		add(p.Job)
	}
	return out
}

// notRunning reports what status's exit 3 means: a process that should
// run (wanted up, monitored) does not, or a configuration error exists.
func notRunning(st control.Status) bool {
	for _, p := range st.Processes {
		if p.Wanted == "up" && !p.Unmonitored && p.State != "running" {
			return true
		}
	}
	return slices.ContainsFunc(st.Problems, func(p control.Problem) bool { return p.Severity == "error" })
}

func defineSignal(c *command) func([]string) error {
	procName := c.String("p,process", "", "the process `PROC` to signal (required)")
	c.completes(completeProcess)
	return func(pos []string) error {
		if *procName == "" {
			return c.usagef("needs -p PROC")
		}
		if _, err := control.ParseSignal(pos[1]); err != nil {
			name := strings.TrimPrefix(strings.ToUpper(pos[1]), "SIG")
			return c.usagef("unknown signal %s%s", pos[1], suggest.Phrase(name, signalNames(), "signals"))
		}
		client, err := connect(c)
		if err != nil {
			return err
		}
		ctx, cancel := interruptible()
		defer cancel()
		return client.Signal(ctx, control.SignalRequest{Job: pos[0], Process: *procName, Signal: pos[1]})
	}
}

func defineReload(c *command) func([]string) error {
	dry := c.Bool("n,dry-run", "say what a reload would start, stop and restart, and do nothing")
	asJSON := c.Bool("json", "print JSON")
	return func(pos []string) error {
		client, err := connect(c)
		if err != nil {
			return err
		}
		ctx, cancel := interruptible()
		defer cancel()
		var res control.ReloadResult
		if *dry {
			res, err = client.PlanReload(ctx)
		} else {
			res, err = client.Reload(ctx)
		}
		if err != nil && errors.Is(err, control.ErrNoDaemon) {
			return err
		}
		if *asJSON {
			if werr := writeJSON(os.Stdout, res); werr != nil {
				return werr
			}
		} else {
			writeReload(os.Stdout, os.Stderr, res)
		}
		if err != nil {
			return err
		}
		return rejected(res)
	}
}

// writeReload prints what a reload did (or would do) on out, its problems
// on errs.
func writeReload(out, errs io.Writer, res control.ReloadResult) {
	verb := func(done, would string) string {
		if res.DryRun {
			return would
		}
		return done
	}
	for _, l := range []struct {
		what  string
		names []string
	}{{verb("started", "would start"), res.Started}, {verb("stopped", "would stop"), res.Stopped},
		{verb("restarted", "would restart"), res.Restarted}} {
		for _, n := range l.names {
			fmt.Fprintf(out, "%s %s\n", l.what, n)
		}
	}
	fmt.Fprintf(out, "%d unchanged\n", len(res.Unchanged))
	for _, p := range res.Problems {
		fmt.Fprintln(errs, problemLine(p))
	}
}

// rejected is the error of a reload that refused a configuration (exit 1):
// it names the jobs, which keep what they run.
func rejected(res control.ReloadResult) error {
	errs := slices.ContainsFunc(res.Problems, func(p control.Problem) bool { return p.Severity == "error" })
	switch {
	case len(res.Rejected) > 0 && res.DryRun:
		return exitWith(exitFailed, fmt.Errorf("the configuration of %s would be rejected: each would keep what it runs", strings.Join(res.Rejected, ", ")))
	case len(res.Rejected) > 0:
		return exitWith(exitFailed, fmt.Errorf("the configuration of %s was rejected: each keeps what it runs (its previous configuration, or nothing)", strings.Join(res.Rejected, ", ")))
	case errs:
		return exitWith(exitFailed, fmt.Errorf("the configuration has errors (above)"))
	}
	return nil
}
