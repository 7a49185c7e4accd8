package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/vigil-bosh/vigil/control"
)

// connect parses a client command's flags and returns its positional
// arguments and a client for the daemon of its root.
func connect(c *command, args []string) ([]string, *control.Client, error) {
	pos, err := c.parse(args)
	if err != nil {
		return nil, nil, err
	}
	l, err := c.layout()
	if err != nil {
		return nil, nil, err
	}
	return pos, control.NewClient(l.ControlSocket()), nil
}

// interruptible is a context that ends on SIGINT or SIGTERM, so that a
// waiting client can be abandoned; the daemon finishes the action anyway.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

func runStatus(args []string) error {
	c := newCommand("status")
	asJSON := c.fs.Bool("json", false, "print JSON")
	pos, client, err := connect(c, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("status takes no arguments")
	}
	ctx, cancel := interruptible()
	defer cancel()
	st, err := client.Status(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	// One write for the table, not one per cell run (tabwriter writes as
	// it goes): a status of 100 processes was 200 write calls.
	out := bufio.NewWriter(os.Stdout)
	writeStatus(out, st, isTerminal(os.Stdout))
	return out.Flush()
}

func runAction(action string, args []string) error {
	c := newCommand(action)
	procName := c.fs.String("p", "", "process (default: every process of the job)")
	c.fs.StringVar(procName, "process", "", "same as -p")
	pos, client, err := connect(c, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("%s needs exactly one JOB", action)
	}
	ctx, cancel := interruptible()
	defer cancel()
	ps, err := client.Act(ctx, control.ActionRequest{Action: action, Job: pos[0], Process: *procName})
	for _, p := range ps {
		fmt.Printf("%s/%s: %s\n", p.Job, p.Process, p.State)
	}
	return err
}

func runSignal(args []string) error {
	c := newCommand("signal")
	procName := c.fs.String("p", "", "process")
	c.fs.StringVar(procName, "process", "", "same as -p")
	pos, client, err := connect(c, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 || *procName == "" {
		return usageError("usage: vigil signal JOB -p PROC SIGNAL")
	}
	ctx, cancel := interruptible()
	defer cancel()
	return client.Signal(ctx, control.SignalRequest{Job: pos[0], Process: *procName, Signal: pos[1]})
}

func runReload(args []string) error {
	c := newCommand("reload")
	pos, client, err := connect(c, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("reload takes no arguments")
	}
	ctx, cancel := interruptible()
	defer cancel()
	res, err := client.Reload(ctx)
	for _, l := range []struct {
		what  string
		names []string
	}{{"started", res.Started}, {"stopped", res.Stopped}, {"restarted", res.Restarted}} {
		for _, n := range l.names {
			fmt.Printf("%s %s\n", l.what, n)
		}
	}
	fmt.Printf("%d unchanged\n", len(res.Unchanged))
	for _, p := range res.Problems {
		fmt.Fprintln(os.Stderr, problemLine(p))
	}
	return err
}
