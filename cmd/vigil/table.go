package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
)

// writeStatus prints the processes as a table and then the problems, with
// colour when color is set (a terminal).
func writeStatus(w io.Writer, st control.Status, color bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tPROCESS\tSTATE\tHEALTH\tPID\tUPTIME\tRESTARTS\tMEM\tCPU\tLAST EXIT")
	now := time.Now()
	for _, p := range st.Processes {
		pid, up := "-", "-"
		if p.PID != 0 {
			pid = strconv.Itoa(p.PID)
		}
		if p.State == "running" {
			up = since(now, p.Since)
		}
		last := "-"
		if p.LastExit != nil {
			last = p.LastExit.Description + " " + since(now, p.LastExit.At) + " ago"
		}
		mem, cpu := usageCells(p.Usage)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", p.Job, p.Process, paint(p.State, color), healthCell(p),
			pid, up, p.Restarts, mem, cpu, last)
	}
	tw.Flush()
	if b := st.Daemon.Backend; b != "" && b != "native" {
		fmt.Fprintln(w, "backend:", b) // the native back end, the usual one, goes unsaid
	}
	for _, p := range st.Problems {
		fmt.Fprintln(w, problemLine(p))
	}
	for _, p := range st.Processes {
		for _, warn := range p.Warnings { // isolation or limits not enforced
			fmt.Fprintf(w, "warning: %s/%s: %s\n", p.Job, p.Process, warn)
		}
		if o := p.Output; o.DroppedStdout > 0 || o.DroppedStderr > 0 {
			fmt.Fprintf(w, "warning: %s/%s: output lost, the log could not take it: %s of stdout, %s of stderr\n",
				p.Job, p.Process, bytesCell(o.DroppedStdout), bytesCell(o.DroppedStderr))
		}
	}
}

// usageCells shows resident memory and CPU time, "-" when nothing runs.
func usageCells(u *control.Usage) (mem, cpu string) {
	if u == nil {
		return "-", "-"
	}
	d := time.Duration(u.CPUSeconds * float64(time.Second))
	if d < time.Minute {
		cpu = strconv.FormatFloat(u.CPUSeconds, 'f', 2, 64) + "s"
	} else {
		cpu = d.Round(time.Second).String()
	}
	return bytesCell(u.RSSBytes), cpu
}

// bytesCell is n bytes in binary units: 512B, 1.5K, 12.3M, 2.0G.
func bytesCell(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, unit := float64(n)/1024, "K"
	for _, u := range []string{"M", "G", "T"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + unit
}

// healthCell shows health and readiness: "-" when not running, else the
// health word (when it has startup or liveness probes) and ready or not.
func healthCell(p control.ProcessStatus) string {
	if p.State != "running" {
		return "-"
	}
	ready := "ready"
	if !p.Ready {
		ready = "not-ready"
	}
	if p.Health == "" {
		return ready
	}
	return p.Health + "," + ready
}

func problemLine(p control.Problem) string {
	var b strings.Builder
	b.WriteString(p.Severity + ": ")
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	} else if p.Job != "" {
		b.WriteString("job " + p.Job + ": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// paint colours a state word with its padding kept out of the escape codes
// (tabwriter counts the escape bytes as width, so every cell gets them).
func paint(state string, color bool) string {
	if !color {
		return state
	}
	codes := map[string]string{"running": "32", "starting": "36", "stopping": "33", "backoff": "33", "failed": "31", "stopped": "90"}
	code, ok := codes[state]
	if !ok {
		code = "0"
	}
	return "\x1b[" + code + "m" + state + "\x1b[0m"
}

func since(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil && os.Getenv("NO_COLOR") == ""
}
