package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
)

// writeStatus prints the processes as a table and then the problems, with
// colour when color is set (a terminal). Columns are aligned on what shows:
// the colour's escape codes take no width.
func writeStatus(w io.Writer, st control.Status, color bool) {
	t := &table{}
	t.row(cell{text: "JOB"}, cell{text: "PROCESS"}, cell{text: "STATE"}, cell{text: "HEALTH"}, cell{text: "PID"},
		cell{text: "UPTIME"}, cell{text: "RESTARTS"}, cell{text: "MEM"}, cell{text: "CPU"}, cell{text: "LAST EXIT"})
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
		state := cell{text: stateCell(p, now)}
		if color {
			state.color = stateColor(p.State)
		}
		t.row(cell{text: p.Job}, cell{text: p.Process}, state, cell{text: healthCell(p)}, cell{text: pid}, cell{text: up},
			cell{text: strconv.Itoa(p.Restarts)}, cell{text: mem}, cell{text: cpu}, cell{text: last})
	}
	t.write(w)
	if b := st.Daemon.Backend; b != "" && b != "native" {
		fmt.Fprintln(w, "backend:", b) // the native back end, the usual one, goes unsaid
	}
	if d := st.Daemon.Drain; d != nil {
		fmt.Fprintln(w, drainLine(*d, now))
	}
	for _, p := range st.Problems {
		fmt.Fprintln(w, problemLine(p))
	}
	writeWarnings(w, st.Processes)
	for _, p := range st.Processes {
		if o := p.Output; o.DroppedStdout > 0 || o.DroppedStderr > 0 {
			fmt.Fprintf(w, "warning: %s/%s: output lost, the log could not take it: %s of stdout, %s of stderr\n",
				p.Job, p.Process, bytesCell(o.DroppedStdout), bytesCell(o.DroppedStderr))
		}
	}
}

// writeWarnings says once each warning about isolation or limits not
// enforced, with the processes it holds for ("all N processes" when it
// holds for every one shown: without isolation that is every process).
func writeWarnings(w io.Writer, ps []control.ProcessStatus) {
	var texts []string
	who := map[string][]string{}
	for _, p := range ps {
		for _, warn := range p.Warnings {
			if _, seen := who[warn]; !seen {
				texts = append(texts, warn)
			}
			who[warn] = append(who[warn], p.Job+"/"+p.Process)
		}
	}
	for _, warn := range texts {
		names := strings.Join(who[warn], ", ")
		if n := len(who[warn]); n > 1 && n == len(ps) {
			names = fmt.Sprintf("all %d processes", n)
		}
		fmt.Fprintf(w, "warning: %s: %s\n", names, warn)
	}
}

// stateCell is a process's state, with the ladder's step while it stops
// ("stopping (SIGQUIT 2s ago)") and "unmonitored" when it is.
func stateCell(p control.ProcessStatus, now time.Time) string {
	s := p.State
	if st := p.Stop; st != nil {
		s += " (" + st.Signal + " " + since(now, st.StepAt) + " ago)"
	}
	if p.Unmonitored {
		s += ", unmonitored"
	}
	return s
}

// drainLine says where a container's drain stands: "drain: done (begun
// by SIGTERM 12s ago, took 3s)".
func drainLine(d control.DrainState, now time.Time) string {
	state := map[string]string{control.DrainRunning: "running", control.DrainDone: "done", control.DrainFailed: "failed"}[d.State]
	if state == "" {
		state = d.State
	}
	line := "drain: " + state + " (begun by " + drainCause(d.By) + " " + since(now, d.Began) + " ago"
	if d.Ended != nil {
		line += ", took " + since(*d.Ended, d.Began)
	}
	line += ")"
	if d.Error != "" {
		line += ": " + d.Error
	}
	return line
}

// cell is one table cell: its text, and the colour it is shown in (an
// SGR code, "" for none).
type cell struct{ text, color string }

// table lays out rows of cells in columns two spaces apart, padding by the
// text's width alone so that colour codes do not shift the columns.
type table struct{ rows [][]cell }

func (t *table) row(cells ...cell) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		b.Reset()
		for i, c := range r {
			if c.color != "" {
				b.WriteString("\x1b[" + c.color + "m" + c.text + "\x1b[0m")
			} else {
				b.WriteString(c.text)
			}
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+2))
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
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

// problemLine is a problem as status, check and reload print it.
func problemLine(p control.Problem) string { return p.Severity + ": " + backend.ProblemText(p) }

// stateColor is the SGR colour of a state word.
func stateColor(state string) string {
	codes := map[string]string{"running": "32", "starting": "36", "stopping": "33", "backoff": "33", "failed": "31", "stopped": "90"}
	return codes[state]
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
