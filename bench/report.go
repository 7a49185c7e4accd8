package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// column is one value column of a table; Ratio adds a "vigil ÷" column
// with vigil's value divided by the row's.
type column struct {
	Title string
	Key   string
	Ratio bool
}

// table is one Markdown table with a row per supervisor.
type table struct {
	Title string
	Note  string
	Cols  []column
}

// lookup fetches a cell; ok is false when nothing was recorded.
type lookup func(key, peer string) (cell, bool)

// renderTable renders t with one row per peer.
func renderTable(t table, peers []string, get lookup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", t.Title)
	if t.Note != "" {
		fmt.Fprintf(&b, "%s\n\n", t.Note)
	}
	head := []string{"supervisor"}
	for _, c := range t.Cols {
		head = append(head, c.Title)
		if c.Ratio {
			head = append(head, "vigil ÷")
		}
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		if i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString("--:|")
		}
	}
	b.WriteString("\n")
	for _, p := range peers {
		row := []string{p}
		for _, c := range t.Cols {
			v, ok := get(c.Key, p)
			if !ok {
				v = cell{V: math.NaN(), Text: "—"}
			}
			row = append(row, escapeCell(v.Text))
			if c.Ratio {
				ratio := "—"
				if vg, ok := get(c.Key, "vigil"); ok && p != "vigil" {
					ratio = fmtRatio(vg.V, v.V)
				}
				row = append(row, ratio)
			}
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n")
	return b.String()
}

// summaryRow is one line of the summary: a metric across supervisors.
type summaryRow struct{ Label, Key string }

// renderSummary renders metrics as rows and supervisors as columns.
func renderSummary(rows []summaryRow, peers []string, get lookup) string {
	var b strings.Builder
	b.WriteString("| metric | " + strings.Join(peers, " | ") + " |\n|---|")
	b.WriteString(strings.Repeat("--:|", len(peers)) + "\n")
	for _, r := range rows {
		line := []string{r.Label}
		for _, p := range peers {
			v, ok := get(r.Key, p)
			if !ok {
				v.Text = "—"
			}
			line = append(line, escapeCell(v.Text))
		}
		b.WriteString("| " + strings.Join(line, " | ") + " |\n")
	}
	return b.String() + "\n"
}

func escapeCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// renderReport assembles the whole Markdown report.
func renderReport(h *harness, facts [][2]string, elapsed time.Duration, args string) string {
	get := h.res.get
	m := h.m
	n := fmt.Sprint(mainN)
	var b strings.Builder
	fmt.Fprintf(&b, "# vigil side-by-side benchmark (%s mode)\n\n", m.Name)
	fmt.Fprintf(&b, "`go run ./bench %s` — finished %s, took %s. See bench/README.md for method and caveats.\n\n",
		args, time.Now().UTC().Format(time.RFC3339), elapsed.Round(time.Second))
	b.WriteString("## Machine\n\n| fact | value |\n|---|---|\n")
	for _, f := range facts {
		fmt.Fprintf(&b, "| %s | %s |\n", f[0], escapeCell(f[1]))
	}
	b.WriteString("\n## Summary (N=" + n + " unless noted)\n\n")
	rows := []summaryRow{
		{"start N=" + n, "start/" + n},
		{"  supervisor CPU for it", "startcpu/" + n},
		{"restart median", "restart.med/" + n},
		{"restart p95", "restart.p95/" + n},
		{"stop-all, prompt", "stop.all"},
		{fmt.Sprintf("stop-all, 1 ignores TERM (N=%d)", m.IgnoreN), "ign.all"},
		{"  TERM-ignorer", "ign.signals"},
		{"  leftovers", "ign.left"},
		{fmt.Sprintf("crash loop: starts in %s", m.Crash), "crash.starts"},
		{"  backs off / gives up", "crash.backoff"},
		{"idle CPU", "cpu/" + n},
		{"RSS total", "rss/" + n},
		{"PSS total", "pss/" + n},
		{"  per process: its own supervisor, private", "priv.per/" + n},
		{"  per process: the root's PSS ÷ N", "root.share/" + n},
		{"status query", "status/" + n},
		{"  spaced 1.2 s apart", "status.spaced/" + n},
	}
	if big := m.Sizes[len(m.Sizes)-1]; big > mainN {
		b := fmt.Sprint(big)
		rows = append(rows, summaryRow{"start N=" + b, "start/" + b}, summaryRow{"  supervisor CPU for it", "startcpu/" + b},
			summaryRow{"restart median N=" + b, "restart.med/" + b}, summaryRow{"PSS total N=" + b, "pss/" + b},
			summaryRow{"  per process: its own supervisor, private", "priv.per/" + b},
			summaryRow{"  per process: the root's PSS ÷ N", "root.share/" + b}, summaryRow{"status query N=" + b, "status/" + b},
			summaryRow{"  spaced 1.2 s apart", "status.spaced/" + b})
	}
	b.WriteString(renderSummary(rows, h.peers, func(key, p string) (cell, bool) {
		c, ok := get(key, p)
		if key == "crash.backoff" && ok {
			g, _ := get("crash.gaveup", p)
			c.Text += " / " + strings.SplitN(g.Text, " ", 2)[0]
		}
		return c, ok
	}))
	b.WriteString("## Details\n\n")
	for _, t := range detailTables(m) {
		b.WriteString(renderTable(t, h.peers, get))
	}
	b.WriteString("## Stop behaviour of each supervisor\n\n")
	for _, p := range h.peers {
		if d, err := newDriver(p, ""); err == nil {
			fmt.Fprintf(&b, "- **%s**: %s\n", p, d.StopNote())
		}
	}
	if len(h.res.notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, s := range h.res.notes {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return b.String()
}

// detailTables lists the per-measurement tables.
func detailTables(m mode) []table {
	n := fmt.Sprint(mainN)
	growth := func(title, prefix string, ratio bool) table {
		t := table{Title: title}
		for _, s := range m.Sizes {
			t.Cols = append(t.Cols, column{Title: fmt.Sprintf("N=%d", s), Key: fmt.Sprintf("%s/%d", prefix, s), Ratio: ratio})
		}
		return t
	}
	return []table{
		{Title: "Start N=" + n, Note: fmt.Sprintf("Launch of the supervisor until the last of the N children started (child's own CLOCK_MONOTONIC); the CPU its processes had used by then (schedstat of every thread, and the children they reaped). Each the median of %d starts, each torn down before the next (monit: one start).", max(m.StartRuns, 1)),
			Cols: []column{{"time", "start/" + n, true}, {"supervisor CPU", "startcpu/" + n, true}}},
		{Title: "Restart after SIGKILL, N=" + n, Note: fmt.Sprintf("%d SIGKILLs, each of a random child up for at least 1.5 s after a random 0–1 s pause; from the kill until the new child started.", m.RestartSamples),
			Cols: []column{{"median", "restart.med/" + n, true}, {"p95", "restart.p95/" + n, true}}},
		{Title: "Stop-all, N=" + n + " prompt children",
			Cols: []column{{"all children gone", "stop.all", true}, {"stop command", "stop.cmd", false}, {"leftovers", "stop.left", false}}},
		{Title: fmt.Sprintf("Stop-all, N=%d, the last child ignores TERM", m.IgnoreN),
			Note: "Signal times are relative to the stop command; a death after the last caught signal, not caused by the harness, means KILL came.",
			Cols: []column{{"prompt ones gone", "ign.prompt", true}, {"all gone", "ign.all", true}, {"stop command", "ign.cmd", false},
				{"TERM-ignorer", "ign.signals", false}, {"leftovers", "ign.left", false}}},
		{Title: fmt.Sprintf("Crash loop (exit 1 at once), starts within %s of the first", m.Crash),
			Note: fmt.Sprintf("Observed for a further %s to see whether the supervisor gives up.", m.CrashExtra),
			Cols: []column{{"starts", "crash.starts", false}, {"intervals", "crash.intervals", false},
				{"backs off", "crash.backoff", false}, {"gives up", "crash.gaveup", false}}},
		{Title: fmt.Sprintf("Idle CPU over %s, N=%s", m.Idle, n), Note: "utime+stime of the supervisor's own processes, % of one core.",
			Cols: []column{{"CPU", "cpu/" + n, true}}},
		{Title: "Memory, N=" + n, Note: "Summed over the supervisor's own processes (smaps_rollup), and divided by N. " +
			"The split: the average private memory (Private_Clean + Private_Dirty: pages no other process maps) of the per-process supervisors " +
			"(vigil's inits and spares, runsv, s6-supervise, supervise), and the root process's PSS divided by N (vigil's daemon, runsvdir, s6-svscan, svscan; monit and supervisord are the root alone).",
			Cols: []column{{"processes", "procs/" + n, false}, {"RSS", "rss/" + n, true}, {"PSS", "pss/" + n, true},
				{"RSS per child", "rss.per/" + n, false}, {"PSS per child", "pss.per/" + n, false},
				{"own supervisor, private", "priv.per/" + n, true}, {"root's PSS ÷ N", "root.share/" + n, true}}},
		{Title: "Status query over all N=" + n, Note: fmt.Sprintf("Median wall time of %d runs of the status command back to back (a quarter of that above N=%d), and of %d runs each at least %s after the supervisor's last, the supervisors taking turns (vigil shares one /proc pass between the statuses of one second: spaced queries each pay for a fresh one).", m.StatusRuns, mainN, m.SpacedRuns, spacedGap),
			Cols: []column{{"back to back", "status/" + n, true}, {"spaced", "status.spaced/" + n, true}}},
		growth("Growth: start time", "start", true),
		growth("Growth: supervisor CPU for the start", "startcpu", true),
		growth("Growth: restart median", "restart.med", true),
		growth("Growth: idle CPU", "cpu", true),
		growth("Growth: PSS of the supervisor", "pss", true),
		growth("Growth: PSS per child", "pss.per", true),
		growth("Growth: per process, its own supervisor's private memory", "priv.per", true),
		growth("Growth: per process, the root's PSS ÷ N", "root.share", true),
		growth("Growth: status query back to back (N=100 and above)", "status", true),
		growth("Growth: status query spaced (N=100 and above)", "status.spaced", true),
	}
}
