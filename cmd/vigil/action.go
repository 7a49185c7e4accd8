package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/logtail"
)

// failureLines is how many of its last log lines a process that failed to
// start shows, per file.
const failureLines = 10

// defineAction is start, stop or restart: the action through the daemon,
// waiting as --wait says, with the ladder's progress on a terminal.
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
		asJSON := c.Bool("json", "print the processes' statuses as JSON")
		return func(pos []string) error {
			req := control.ActionRequest{Action: action, Job: pos[0], Process: *procName, Wait: *wait}
			switch {
			case *wait == "stopped" && action == control.ActionStop:
				req.Wait = ""
			case *wait == control.WaitNone, action != control.ActionStop && (*wait == control.WaitReady || *wait == control.WaitRunning):
			default:
				return c.usagef("--wait %s: want %s", *wait, c.flagCompletion("wait"))
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
// last exit and last log lines.
func act(l boshpath.Layout, req control.ActionRequest, asJSON bool) error {
	client := control.NewClient(l.ControlSocket())
	ctx, cancel := interruptible()
	defer cancel()
	var endProgress func(seq uint64)
	if !asJSON && isTerminal(os.Stderr) {
		endProgress = showProgress(ctx, client, req, os.Stderr)
	}
	r, err := client.Action(ctx, req)
	ps := r.Processes
	if endProgress != nil {
		endProgress(r.Seq)
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
	if err == nil {
		return nil
	}
	target := req.Job
	if req.Process != "" {
		target += "/" + req.Process
	}
	if errors.Is(err, context.Canceled) {
		return exitWith(exitInterrupted, fmt.Errorf("interrupted: the daemon goes on with the %s of %s (vigil status shows where it stands)", req.Action, target))
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
	return &exitError{code: code}
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
func writeFailure(w io.Writer, l boshpath.Layout, p control.ProcessStatus) {
	id := p.Job + "/" + p.Process
	if e := p.LastExit; e != nil {
		fmt.Fprintf(w, "%s: last exit: %s (%s ago)\n", id, e.Description, since(time.Now(), e.At))
	}
	if boshpath.CheckName(p.Job) != nil || boshpath.CheckName(p.Process) != nil {
		return
	}
	for _, path := range []string{l.StderrLog(p.Job, p.Process), l.StdoutLog(p.Job, p.Process)} {
		lines, _, err := logtail.Tail(path, failureLines, failureLines*logsBytesPerLine)
		if err != nil || len(lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s: the last lines of %s:\n", id, path)
		for _, line := range lines {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
}

// showProgress prints the events of req's target on w as they happen (the
// stop ladder's steps, exits, restarts) until the returned function is
// called with the number of the event the action's reply came after; it
// returns once that event has been read (the events that led to the reply
// are all printed), or at once for 0, a lost event or an interrupt.
func showProgress(ctx context.Context, client *control.Client, req control.ActionRequest, w io.Writer) func(seq uint64) {
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
				if ev.Job == req.Job && (req.Process == "" || ev.Process == req.Process) {
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
