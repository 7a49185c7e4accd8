package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-bosh/vigil/control"
)

// topView is what vigil top shows, apart from the terminal: the latest
// status, each process's CPU share since the status before, the order,
// the filter and the selected process. Its methods are called from one
// goroutine.
type topView struct {
	st      control.Status
	cpu     map[string]float64 // JOB/PROC → its share of a CPU over the last second or so, when known
	base    map[string]cpuBase
	sort    int    // index in topSorts
	filter  string // a substring of JOB/PROC or of the state
	sel     string // the selected JOB/PROC
	top     int    // the first row shown, for scrolling
	color   bool
	message string // the last action's outcome, or a prompt
}

// topSorts are the orders o cycles through: each names a column and
// compares two processes for it (ties go by name).
func topSorts() []struct {
	name string
	less func(a, b control.ProcessStatus, v *topView) int
} {
	usage := func(p control.ProcessStatus) int64 {
		if p.Usage == nil {
			return -1
		}
		return p.Usage.RSSBytes
	}
	return []struct {
		name string
		less func(a, b control.ProcessStatus, v *topView) int
	}{
		{"name", func(a, b control.ProcessStatus, v *topView) int { return 0 }},
		{"state", func(a, b control.ProcessStatus, v *topView) int { return cmp.Compare(stateRank(a), stateRank(b)) }},
		{"cpu", func(a, b control.ProcessStatus, v *topView) int { return cmp.Compare(v.cpu[id(b)], v.cpu[id(a)]) }},
		{"memory", func(a, b control.ProcessStatus, v *topView) int { return cmp.Compare(usage(b), usage(a)) }},
		{"restarts", func(a, b control.ProcessStatus, v *topView) int { return cmp.Compare(b.Restarts, a.Restarts) }},
		{"uptime", func(a, b control.ProcessStatus, v *topView) int { return a.Since.Compare(b.Since) }},
	}
}

// stateRank puts what needs looking at first: failed, backoff, stopping,
// starting, stopped, running.
func stateRank(p control.ProcessStatus) int {
	i := slices.Index([]string{"failed", "backoff", "stopping", "starting", "stopped", "running"}, p.State)
	if i < 0 {
		return 0
	}
	return i
}

func id(p control.ProcessStatus) string { return p.Job + "/" + p.Process }

// cpuBase is where a process's CPU share is next measured from.
type cpuBase struct {
	seconds float64 // its CPU time then
	pid     int     // of the instance measured
	at      time.Time
}

// update takes a new status read at now. A process's CPU share is its CPU
// time over the wall time since its base, measured once at least a second
// has passed (reads that events bring sooner keep the last figure).
func (v *topView) update(st control.Status, now time.Time) {
	if v.cpu == nil {
		v.cpu, v.base = map[string]float64{}, map[string]cpuBase{}
	}
	seen := map[string]bool{}
	for _, p := range st.Processes {
		k := id(p)
		seen[k] = true
		if p.Usage == nil {
			delete(v.cpu, k)
			delete(v.base, k)
			continue
		}
		b, ok := v.base[k]
		switch {
		case !ok || b.pid != p.PID:
			delete(v.cpu, k)
			v.base[k] = cpuBase{p.Usage.CPUSeconds, p.PID, now}
		case now.Sub(b.at) >= time.Second:
			v.cpu[k] = max(0, (p.Usage.CPUSeconds-b.seconds)/now.Sub(b.at).Seconds())
			v.base[k] = cpuBase{p.Usage.CPUSeconds, p.PID, now}
		}
	}
	for k := range v.base {
		if !seen[k] {
			delete(v.base, k)
			delete(v.cpu, k)
		}
	}
	v.st = st
	if _, ok := v.selected(); !ok {
		if rows := v.rows(); len(rows) > 0 {
			v.sel = id(rows[0])
		}
	}
}

// rows are the processes shown: those the filter matches, in the order
// chosen.
func (v *topView) rows() []control.ProcessStatus {
	var out []control.ProcessStatus
	for _, p := range v.st.Processes {
		if v.filter == "" || strings.Contains(id(p), v.filter) || strings.HasPrefix(p.State, v.filter) {
			out = append(out, p)
		}
	}
	by := topSorts()[v.sort].less
	slices.SortStableFunc(out, func(a, b control.ProcessStatus) int {
		if c := by(a, b, v); c != 0 {
			return c
		}
		return strings.Compare(id(a), id(b))
	})
	return out
}

// selected is the selected process, if any is shown.
func (v *topView) selected() (control.ProcessStatus, bool) {
	rows := v.rows()
	i := slices.IndexFunc(rows, func(p control.ProcessStatus) bool { return id(p) == v.sel })
	if i < 0 {
		return control.ProcessStatus{}, false
	}
	return rows[i], true
}

// move moves the selection by n rows (clamped).
func (v *topView) move(n int) {
	rows := v.rows()
	if len(rows) == 0 {
		return
	}
	i := slices.IndexFunc(rows, func(p control.ProcessStatus) bool { return id(p) == v.sel })
	i = min(max(i+n, 0), len(rows)-1)
	v.sel = id(rows[i])
}

// topColumn is one column of the table: its heading, its width (0: it
// takes what is left), and the cell of a process.
type topColumn struct {
	head  string
	width int
	cell  func(p control.ProcessStatus, v *topView, now time.Time) string
	right bool // aligned right
}

func topColumns(nameWidth int) []topColumn {
	return []topColumn{
		{"JOB/PROCESS", nameWidth, func(p control.ProcessStatus, _ *topView, _ time.Time) string { return id(p) }, false},
		{"STATE", 8, func(p control.ProcessStatus, _ *topView, _ time.Time) string { return p.State }, false},
		{"HEALTH", 9, func(p control.ProcessStatus, _ *topView, _ time.Time) string { return topHealth(p) }, false},
		{"PID", 7, func(p control.ProcessStatus, _ *topView, _ time.Time) string { return dashZero(p.PID) }, true},
		{"UPTIME", 6, func(p control.ProcessStatus, _ *topView, now time.Time) string { return topUptime(p, now) }, true},
		{"RST", 3, func(p control.ProcessStatus, _ *topView, _ time.Time) string { return strconv.Itoa(p.Restarts) }, true},
		{"CPU%", 5, topCPU, true},
		{"MEM", 6, func(p control.ProcessStatus, _ *topView, _ time.Time) string {
			if p.Usage == nil {
				return "-"
			}
			return bytesCell(p.Usage.RSSBytes)
		}, true},
		{"LAST EXIT", 0, func(p control.ProcessStatus, _ *topView, now time.Time) string {
			if p.LastExit == nil {
				return "-"
			}
			return topExit(*p.LastExit) + " " + roughAgo(now.Sub(p.LastExit.At))
		}, false},
	}
}

// topHealth is health and readiness in a word or two: "ready", "not
// ready", "unhealthy", "-" when it does not run.
func topHealth(p control.ProcessStatus) string {
	switch {
	case p.State != "running":
		return "-"
	case p.Health != "" && p.Health != "healthy":
		return p.Health
	case !p.Ready:
		return "not ready"
	}
	return "ready"
}

// topExit is an exit in a word or two, as a narrow column can show it
// (vigil status says more): "code 1", "SIGKILL", "OOM", "stopped", and
// an exit that never ran its executable by its reason.
func topExit(e control.Exit) string {
	switch {
	case e.Error != "":
		return e.Error
	case e.StopStep != "":
		return "stopped"
	case e.OOM:
		return "OOM"
	case e.Signal != "":
		return e.Signal
	}
	return "code " + strconv.Itoa(e.Code)
}

// roughAgo is a duration in its largest unit: 45s, 12m, 3h, 2d.
func roughAgo(d time.Duration) string {
	s := int64(max(d.Seconds(), 0))
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m"
	case s < 86400:
		return strconv.FormatInt(s/3600, 10) + "h"
	}
	return strconv.FormatInt(s/86400, 10) + "d"
}

func topCPU(p control.ProcessStatus, v *topView, _ time.Time) string {
	c, ok := v.cpu[id(p)]
	if !ok || p.Usage == nil {
		return "-"
	}
	return strconv.FormatFloat(c*100, 'f', 1, 64)
}

func topUptime(p control.ProcessStatus, now time.Time) string {
	if p.State != "running" {
		return "-"
	}
	return compactAgo(now.Sub(p.Since))
}

// compactAgo is a duration in at most two units: 45s, 12m3s, 3h12m, 2d4h.
func compactAgo(d time.Duration) string {
	s := int64(d.Seconds())
	switch {
	case s < 60:
		return strconv.FormatInt(max(s, 0), 10) + "s"
	case s < 3600:
		return fmt.Sprintf("%dm%ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
}

func dashZero(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// render lays the view out in width columns and height lines: a header,
// the table (scrolled to keep the selection in view), the message line
// and the keys.
func (v *topView) render(width, height int, now time.Time) []string {
	rows := v.rows()
	nameWidth := len("JOB/PROCESS")
	for _, p := range rows {
		nameWidth = max(nameWidth, utf8.RuneCountInString(id(p)))
	}
	cols := topColumns(min(nameWidth, max(12, width/5)))
	lines := []string{v.header(width)}
	heads := make([]string, len(cols))
	for i, c := range cols {
		heads[i] = c.head
	}
	lines = append(lines, escBold+layoutRow(cols, heads, width)+escReset)
	room := max(height-5, 1) // header, headings, message, keys, one spare
	sel := slices.IndexFunc(rows, func(p control.ProcessStatus) bool { return id(p) == v.sel })
	if sel >= 0 {
		v.top = min(max(v.top, sel-room+1), sel)
	}
	v.top = max(min(v.top, len(rows)-room), 0)
	for i := v.top; i < len(rows) && i < v.top+room; i++ {
		p := rows[i]
		cells := make([]string, len(cols))
		for j, c := range cols {
			cells[j] = c.cell(p, v, now)
		}
		line, after := layoutRow(cols, cells, width), ""
		if i == sel {
			after = escReverse
		}
		if v.color {
			line = colorState(line, cols, p.State, after)
		}
		if i == sel {
			line = escReverse + line + escReset
		}
		lines = append(lines, line)
	}
	if len(rows) == 0 {
		lines = append(lines, fit("no process matches "+strconv.Quote(v.filter), width))
	}
	for len(lines) < height-2 {
		lines = append(lines, "")
	}
	lines = append(lines, fit(v.message, width),
		escDim+fit("s start  x stop  r restart (S X R: the job)  l logs  / filter  o sort  q quit", width)+escReset)
	return lines
}

// header is the first line: the root, the counts by state, the order
// and the filter.
func (v *topView) header(width int) string {
	counts := map[string]int{}
	for _, p := range v.st.Processes {
		counts[p.State]++
	}
	var parts []string
	for _, s := range []string{"running", "starting", "backoff", "stopping", "stopped", "failed"} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	h := "vigil top " + v.st.Daemon.Root + "  " + strings.Join(parts, ", ")
	h += "  sort: " + topSorts()[v.sort].name
	if v.filter != "" {
		h += "  filter: " + v.filter
	}
	if n := len(v.st.Problems); n > 0 {
		h += fmt.Sprintf("  %d problem(s): vigil status", n)
	}
	return fit(h, width)
}

// layoutRow lays cells out in cols, one space apart, within width: the
// column of width 0 takes what is left (at least its heading's width);
// a cell too long for its column is cut with "…".
func layoutRow(cols []topColumn, cells []string, width int) string {
	fixed := 0
	for _, c := range cols {
		fixed += c.width + 1
	}
	var b strings.Builder
	for i, c := range cols {
		w := c.width
		if w == 0 {
			w = max(width-fixed, len(c.head))
		}
		text := fit(cells[i], w)
		pad := strings.Repeat(" ", w-utf8.RuneCountInString(text))
		if c.right {
			b.WriteString(pad + text)
		} else {
			b.WriteString(text + pad)
		}
		if i < len(cols)-1 {
			b.WriteByte(' ')
		}
	}
	return fit(strings.TrimRight(b.String(), " "), width)
}

// fit cuts s to width columns, ending it with "…" when cut.
func fit(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	if width <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// colorState colours the STATE cell of a laid-out row; after is what the
// rest of the row is drawn in again (reverse video for the selection).
func colorState(line string, cols []topColumn, state, after string) string {
	code := stateColor(state)
	if code == "" {
		return line
	}
	start := cols[0].width + 1
	r := []rune(line)
	if len(r) < start {
		return line
	}
	end := min(start+cols[1].width, len(r))
	return string(r[:start]) + "\x1b[" + code + "m" + string(r[start:end]) + escReset + after + string(r[end:])
}
