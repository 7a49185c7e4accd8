package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/logtail"
	"github.com/vigil-bosh/vigil/internal/suggest"
)

// failureLines is how many of its last log lines a process that failed to
// start shows, per file.
const failureLines = 10

// defineAction is start, stop or restart: the action through the daemon,
// waiting as --wait says, with the ladder's progress on a terminal. JOB
// all (or --all) is every job the daemon supervises.
func defineAction(action string) func(c *command) func([]string) error {
	return func(c *command) func([]string) error {
		procName := c.String("p,process", "", "only the process `PROC` (default: every process of the job)")
		c.completes(completeProcess)
		var wait *string
		var timeout, uptime *time.Duration
		if action == control.ActionStop {
			wait = c.String("wait", "stopped", "what to wait for: `WHAT` is stopped (nothing of the process left) or none")
			c.completes("stopped|none")
		} else {
			wait = c.String("wait", "ready", "what to wait for: `WHAT` is ready (running, up for --uptime, past its startup and readiness probes), running (up for --uptime) or none")
			c.completes("ready|running|none")
			timeout = c.Duration("timeout", 90*time.Second, "give up waiting after this long (0: never); the start goes on")
			uptime = c.Duration("uptime", time.Second, "how long a process must stay up without an exit to count as started")
		}
		c.allFlag("every job the daemon supervises, at once (JOB all says the same, as monit's all does)")
		asJSON := c.Bool("json", "print the processes' statuses as JSON")
		return func(pos []string) error {
			req := control.ActionRequest{Action: action, Job: pos[0], Process: *procName, Wait: *wait}
			switch {
			case *wait == "stopped" && action == control.ActionStop:
				req.Wait = ""
			case *wait == control.WaitNone, action != control.ActionStop && (*wait == control.WaitReady || *wait == control.WaitRunning):
			default:
				words := c.flagCompletion("wait")
				return c.usagef("--wait %s: want %s%s", *wait, oneOf(words), didYouMean(*wait, strings.Split(words, "|")))
			}
			if req.Job == "all" && req.Process != "" {
				return c.usagef("-p names a process of one JOB, not of all")
			}
			if timeout != nil {
				req.TimeoutSeconds, req.UptimeSeconds = timeout.Seconds(), uptime.Seconds()
			}
			l, err := c.layout()
			if err != nil {
				return err
			}
			return act(l, req, *asJSON)
		}
	}
}

// didYouMean is ` (did you mean "x"?)` for the word of known that word is
// a slip of, else "".
func didYouMean(word string, known []string) string {
	if c, ok := suggest.Closest(word, known); ok {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

// oneOf says a "|"-separated list of words as a choice: "a, b or c".
func oneOf(words string) string {
	w := strings.Split(words, "|")
	if len(w) == 1 {
		return w[0]
	}
	return strings.Join(w[:len(w)-1], ", ") + " or " + w[len(w)-1]
}

// flagCompletion is the completion of flag name's value: for words, the
// words it takes ("ready|running|none").
func (c *command) flagCompletion(name string) string {
	for _, f := range c.flags {
		for _, n := range f.names {
			if n == name {
				return f.complete
			}
		}
	}
	return ""
}

// act runs req through the daemon of l and prints the outcome: each
// process's state, or on a failure the error, then each failed process's
// last exit and last log lines. A request for job "all" is one request
// per job the daemon supervises, sent at once.
func act(l boshpath.Layout, req control.ActionRequest, asJSON bool) error {
	client := control.NewClient(l.ControlSocket())
	ctx, cancel := interruptible()
	defer cancel()
	reqs := []control.ActionRequest{req}
	if req.Job == "all" {
		st, err := client.Status(ctx)
		if err != nil {
			return err
		}
		if reqs = perJob(st, req); len(reqs) == 0 {
			return exitWith(exitNotFound, errors.New("the daemon supervises no process"))
		}
	}
	var endProgress func(seq uint64)
	if !asJSON && isTerminal(os.Stderr) {
		endProgress = showProgress(ctx, client, reqs, os.Stderr)
	}
	replies := make([]control.ActionReply, len(reqs))
	errs := make([]error, len(reqs))
	var sent sync.WaitGroup
	for i, r := range reqs {
		sent.Go(func() { replies[i], errs[i] = client.Action(ctx, r) })
	}
	sent.Wait()
	var ps []control.ProcessStatus
	var last uint64
	for _, r := range replies {
		ps, last = append(ps, r.Processes...), max(last, r.Seq)
	}
	if endProgress != nil {
		endProgress(last)
	}
	if asJSON {
		if werr := writeJSON(os.Stdout, ps); werr != nil {
			return werr
		}
	} else {
		for _, p := range ps {
			fmt.Printf("%s/%s: %s\n", p.Job, p.Process, stateLine(p))
		}
	}
	code := exitOK
	for i, err := range errs {
		if c := reportFailure(l, reqs[i], replies[i].Processes, err); worse(c, code) {
			code = c
		}
	}
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// perJob is req for each job st has processes of, in st's order.
func perJob(st control.Status, req control.ActionRequest) []control.ActionRequest {
	var out []control.ActionRequest
	for _, p := range st.Processes {
		if !slices.ContainsFunc(out, func(r control.ActionRequest) bool { return r.Job == p.Job }) {
			r := req
			r.Job = p.Job
			out = append(out, r)
		}
	}
	return out
}

// worse reports whether exit status a says more than b of what went
// wrong: an interrupt, no daemon, a failure, a bad configuration, no such
// target, a wait that ran out, success.
func worse(a, b int) bool {
	rank := func(c int) int {
		return slices.Index([]int{exitOK, exitTimeout, exitNotFound, exitConfig, exitFailed, exitNoDaemon, exitInterrupted}, c)
	}
	return rank(a) > rank(b)
}

// reportFailure prints why req failed with err (nothing for nil) and
// returns the exit status it gives: for a start or restart, each process
// that did not come up with its last exit and the last lines of its logs.
func reportFailure(l boshpath.Layout, req control.ActionRequest, ps []control.ProcessStatus, err error) int {
	if err == nil {
		return exitOK
	}
	target := req.Job
	if req.Process != "" {
		target += "/" + req.Process
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "vigil: interrupted: the daemon goes on with the %s of %s (vigil status shows where it stands)\n", req.Action, target)
		return exitInterrupted
	}
	code, msg := statusOf(err, exitNotFound)
	fmt.Fprintln(os.Stderr, msg)
	if req.Action != control.ActionStop && (errors.Is(err, control.ErrFailed) || errors.Is(err, control.ErrTimeout)) {
		for _, p := range ps {
			if p.State != "running" || (req.Wait == control.WaitReady && !p.Ready) {
				writeFailure(os.Stderr, l, p)
			}
		}
	}
	return code
}

// stateLine is a process's state after an action: "running", "running,
// ready" or "running, not ready" for one with probes, "stopped".
func stateLine(p control.ProcessStatus) string {
	if p.State != "running" || len(p.Probes) == 0 {
		return p.State
	}
	if p.Ready {
		return "running, ready"
	}
	return "running, not ready"
}

// writeFailure shows why p did not start: its last exit and the last
// lines of its stderr and stdout logs (what a process says as it fails).
// A line repeated (a crash loop says the same at each start) is shown
// once, with how many times it came in a row.
func writeFailure(w io.Writer, l boshpath.Layout, p control.ProcessStatus) {
	id := p.Job + "/" + p.Process
	if e := p.LastExit; e != nil {
		fmt.Fprintf(w, "%s: last exit: %s (%s ago)\n", id, e.Description, since(time.Now(), e.At))
	}
	if boshpath.CheckName(p.Job) != nil || boshpath.CheckName(p.Process) != nil {
		return
	}
	for _, path := range []string{l.StderrLog(p.Job, p.Process), l.StdoutLog(p.Job, p.Process)} {
		// Read ten times the lines shown, so that a repeated line is
		// counted beyond the lines it would have filled.
		lines, _, err := logtail.Tail(path, 10*failureLines, 10*failureLines*logsBytesPerLine)
		if err != nil || len(lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s: the last lines of %s:\n", id, path)
		for _, r := range lastRuns(lines, failureLines, len(lines) == 10*failureLines) {
			switch {
			case r.n == 1:
				fmt.Fprintf(w, "  %s\n", r.line)
			case r.first:
				fmt.Fprintf(w, "  %s   (%d times or more in a row)\n", r.line, r.n)
			default:
				fmt.Fprintf(w, "  %s   (%d times in a row)\n", r.line, r.n)
			}
		}
	}
}

// lineRun is a line repeated n times in a row; first says the run began
// the lines read (it may be longer).
type lineRun struct {
	line  string
	n     int
	first bool
}

// lastRuns is the last max runs of equal lines in lines; cut says the
// file may hold more lines before them.
func lastRuns(lines []string, max int, cut bool) []lineRun {
	var runs []lineRun
	for i := 0; i < len(lines); {
		n := 1
		for i+n < len(lines) && lines[i+n] == lines[i] {
			n++
		}
		runs = append(runs, lineRun{lines[i], n, cut && i == 0})
		i += n
	}
	return runs[len(runs)-min(max, len(runs)):]
}

// showProgress prints the events of reqs' targets on w as they happen (the
// stop ladder's steps, exits, restarts) until the returned function is
// called with the number of the event the action's reply came after; it
// returns once that event has been read (the events that led to the reply
// are all printed), or at once for 0, a lost event or an interrupt.
func showProgress(ctx context.Context, client *control.Client, reqs []control.ActionRequest, w io.Writer) func(seq uint64) {
	ctx, cancel := context.WithCancel(ctx)
	events, err := client.Events(ctx, 0)
	if err != nil {
		cancel()
		return func(uint64) {}
	}
	until := make(chan uint64, 1)
	var done sync.WaitGroup
	done.Go(func() {
		defer cancel()
		var last, seen uint64 // the reply's event (0 until it comes), the latest read
		for {
			select {
			case last = <-until:
				if last == 0 || seen >= last {
					return
				}
				until = nil
			case ev, ok := <-events:
				if !ok || ev.Kind == control.EventLost {
					return
				}
				seen = ev.Seq
				if slices.ContainsFunc(reqs, func(r control.ActionRequest) bool {
					return ev.Job == r.Job && (r.Process == "" || ev.Process == r.Process)
				}) {
					fmt.Fprintln(w, eventLine(ev))
				}
				if last != 0 && seen >= last {
					return
				}
			}
		}
	})
	return func(seq uint64) {
		until <- seq
		done.Wait()
	}
}
