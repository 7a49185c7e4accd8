package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// defineEvents streams the daemon's events, one line each, until Ctrl-C
// (exit 0) or until the daemon goes away (an error).
func defineEvents(c *command) func([]string) error {
	asJSON := c.Bool("json", "print one JSON object per line")
	recent := c.Int("n,recent", 0, "first print up to `N` recent events")
	return func(pos []string) error {
		if *recent < 0 {
			return c.usagef("-n must not be negative")
		}
		client, err := connect(c)
		if err != nil {
			return err
		}
		ctx, cancel := interruptible()
		defer cancel()
		events, err := client.Events(ctx, *recent)
		if err != nil {
			return err
		}
		if err := writeEvents(os.Stdout, events, *asJSON); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil // interrupted
		}
		return errors.New("the event stream ended: the daemon went away")
	}
}

// writeEvents prints each event as it comes until the channel closes.
func writeEvents(w io.Writer, events <-chan control.Event, asJSON bool) error {
	enc := json.NewEncoder(w)
	for ev := range events {
		var err error
		if asJSON {
			err = enc.Encode(ev)
		} else {
			_, err = fmt.Fprintln(w, eventLine(ev))
		}
		if err != nil {
			return fmt.Errorf("write event: %w", err)
		}
	}
	return nil
}

// eventLine is an event for humans: time, process, what happened, e.g.
// "2026-11-30T02:00:01Z web/server exited code 1 (restart 3)".
func eventLine(ev control.Event) string {
	who := ev.Job + "/" + ev.Process
	switch {
	case ev.Job == "":
		who = "-"
	case ev.Process == "":
		who = ev.Job
	}
	what := ev.Kind
	switch ev.Kind {
	case control.EventExited, control.EventOOMKilled:
		what += " " + exitDetail(ev.Exit) + restartNote(ev.Restarts)
	case control.EventStarted:
		what += " pid " + strconv.Itoa(ev.PID)
	case control.EventRestarted:
		down := time.Duration(ev.DownSeconds * float64(time.Second)).Round(time.Microsecond)
		what += fmt.Sprintf(" pid %d (restart %d, down %s)", ev.PID, ev.Restarts, down)
	case control.EventBackoff:
		what += restartNote(ev.Restarts)
	case control.EventLost:
		what = fmt.Sprintf("lost %d events (this reader fell behind)", ev.Lost)
	default:
		if ev.Message != "" {
			what += ": " + strings.ReplaceAll(ev.Message, "\n", "; ")
		}
	}
	return ev.Time.UTC().Format(time.RFC3339) + " " + who + " " + what
}

func exitDetail(e *control.Exit) string {
	switch {
	case e == nil:
		return "(how is unknown)"
	case e.Error != "":
		return "without running: " + e.Error
	case e.StopStep != "":
		return e.Description // "stopped by SIGKILL after 17s (killed by signal SIGKILL)"
	case e.Signal != "":
		return "signal " + strings.TrimPrefix(e.Signal, "SIG")
	}
	return "code " + strconv.Itoa(e.Code)
}

func restartNote(n int) string {
	if n == 0 {
		return ""
	}
	return " (restart " + strconv.Itoa(n) + ")"
}
