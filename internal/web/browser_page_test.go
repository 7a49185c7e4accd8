package web

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/testroot"
)

// TestBrowserGraphsTimelineAndLogs drives headless Chromium against a real
// daemon whose history takes a point every second, on a BOSH instance
// (an agent's spec in the root): the header names the instance; the
// sparklines and a process's five charts are drawn from real points; the
// timeline shows the starts, then a real restart (the process killed) as
// it happens, with its restart drawn in the restarts chart, and a stop
// clicked on the page as the page user's action, with the buttons then
// enabled by the new state; the kind filter hides what it should. The
// log view shows the tail, then follows the process's real output on both
// streams with times, holds lines while paused and shows them on resume.
// Screenshots at desktop and phone width, of both pages, go to the test's
// artifact directory (go test -artifacts).
func TestBrowserGraphsTimelineAndLogs(t *testing.T) {
	exe := chromium(t)
	// A process with probes, for the latency chart: each check runs a
	// real program.
	probed := moreJob{"db", []testroot.Proc{{Name: "pg", Behaviour: "serve",
		YAML: "  health:\n    liveness: {exec: [/bin/true], period: 1s}\n    readiness: {exec: [/bin/sh, -c, 'exit 0'], period: 1s}\n"}}}
	ld := startDaemon(t, probed)
	writeFile(t, ld.layout.AgentSpec(), `{"deployment":"cf","job":{"name":"diego-cell","templates":[]},"index":3,`+
		`"id":"6a8f2c1e-0b6d-4c1e-9d55-2f0c1d3e4b5a","az":"z1","packages":{}}`)
	writeFile(t, ld.layout.StdoutLog("app", "server"), "an old line\n")
	hist := ld.recordHistory(t)
	_, ts := serve(t, ld.d, ld.layout, func(c *Config) { c.History = hist })
	ctx, _ := browse(t, exe)

	server := `tr.proc[data-job="app"][data-process="server"]`
	charts := `.charts[data-key="app/server"]`
	// Opened with the credentials in the URL (user:pass@host), as a link
	// from a runbook may be: the history is read all the same.
	withCredentials := strings.Replace(ts.URL, "http://", "http://"+testUser+":"+url.PathEscape(testPassword)+"@", 1)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(withCredentials+"/"),
		chromedp.WaitVisible(`#live.on`),
		chromedp.WaitReady(`#range[data-loaded="1h"]`),
		chromedp.WaitReady(`#range .error[hidden]`),
		chromedp.WaitVisible(`#events li.kind-started[data-job="app"]`),
		// Two points make a line: the sparklines of the process and of its job.
		chromedp.WaitReady(`svg.spark[data-key="app/server"][data-metric="rss"] path.line[d*="L"]`),
		chromedp.WaitReady(`svg.spark[data-key="worker"][data-metric="cpu"] path.line[d*="L"]`),
		click(server+` + tr.notes details.graphs summary`),
		chromedp.WaitReady(charts+` figure.chart:nth-of-type(5)`),
		chromedp.WaitReady(charts+` figure.chart:nth-of-type(2) path.line[d*="L"]`),
		// The probes' latencies, both lines, from real checks.
		click(`tr.proc[data-job="db"][data-process="pg"] + tr.notes details.graphs summary`),
		chromedp.WaitReady(`.charts[data-key="db/pg"] figure.chart:nth-of-type(5) path.line.l0[d*="L"]`),
		chromedp.WaitReady(`.charts[data-key="db/pg"] figure.chart:nth-of-type(5) path.line.l1[d*="L"]`),
		chromedp.WaitVisible(`tr.proc[data-job="db"] ul.probes li.ok`),
	); err != nil {
		t.Fatal(err)
	}
	// A steady process's sparkline is a line over a shaded area, not a
	// line along an edge; at 1280 pixels no figure wraps.
	if err := chromedp.Do(ctx, chromedp.WaitReady(`svg.spark[data-key="app/server"][data-metric="rss"] path.area`),
		// The CPU cells have their share too ("0.00 s (0%)") from the second update on.
		chromedp.Poll[chromedp.Void](`[...document.querySelectorAll('tr.proc td[data-label="CPU"]')].some(td => td.textContent.includes("%"))`)); err != nil {
		t.Fatal(err)
	}
	wrapped, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('tr.proc td[data-label="CPU"], tr.proc td[data-label="memory"], tr.proc td[data-label="uptime"]')]`+
		`.filter(td => { const r = document.createRange(); r.selectNodeContents(td); return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1 })`+
		`.map(td => td.dataset.label + ": " + td.textContent)`))
	if err != nil || len(wrapped) > 0 {
		t.Errorf("cells wrapped at 1280 px: %q (%v)", wrapped, err)
	}
	who, err := chromedp.Run(ctx, chromedp.Text(`header .who`))
	if err != nil || who != "cf · diego-cell/6a8f2c1e-0b6d-4c1e-9d55-2f0c1d3e4b5a" {
		t.Fatalf("header names %q (%v)", who, err)
	}

	// A real restart, seen live: the exit and the restart in the timeline,
	// and a bar in the restarts chart once the next point is taken.
	before := ld.process(t, "app", "server")
	if err := unix.Kill(before.ExecPID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ld.rep.Expect(t, "ready")
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(`#events li.kind-exited[data-job="app"]`),
		chromedp.WaitVisible(`#events li.kind-restarted[data-job="app"]`),
		chromedp.WaitReady(charts+` figure.chart:nth-of-type(4) rect.bar`),
		chromedp.WaitVisible(server+` + tr.notes details.graphs[open]`), // kept open across the updates
	); err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(`#events li.kind-exited[data-job="app"] .text`))
	if err != nil || text != "killed by signal SIGKILL" {
		t.Fatalf("exit entry %q (%v)", text, err)
	}

	// A stop clicked on the page: the action in the timeline, named by the
	// page's user; the state says it was asked for; start is the one
	// button left to use.
	b := `tr.proc[data-job="worker"][data-process="b"]`
	if err := chromedp.Do(ctx,
		click(b+` button[value="stop"]`),
		chromedp.WaitVisible(b+`[data-state="stopped"][data-why="by an operator"]`),
		chromedp.WaitVisible(`#events li.kind-action[data-job="worker"]`),
		chromedp.WaitVisible(`#events li.kind-stopped[data-job="worker"]`),
	); err != nil {
		t.Fatal(err)
	}
	action, _ := chromedp.Run(ctx, chromedp.Text(`#events li.kind-action[data-job="worker"] .text`))
	if action != "stop, asked by page user "+testUser+" from 127.0.0.1" {
		t.Fatalf("action entry %q", action)
	}
	enabled, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('`+b+` button')].filter(x => !x.disabled).map(x => x.value)`))
	if err != nil || strings.Join(enabled, ",") != "start" {
		t.Fatalf("buttons enabled on a stopped process: %v (%v)", enabled, err)
	}
	shoot(t, ctx, "status-wide.png")

	// The filter: problems only hides the starts and keeps the exit.
	if err := chromedp.Do(ctx, chromedp.SetValue(`#f-kind`, "class:problem"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("f-kind").dispatchEvent(new Event("change")), 0`)); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#events li:not([hidden])')].map(x => x.dataset.kind)`))
	if err != nil || len(shown) == 0 || strings.Contains(" "+strings.Join(shown, " ")+" ", " started ") ||
		!strings.Contains(strings.Join(shown, " "), "exited") {
		t.Fatalf("problems shown: %v (%v)", shown, err)
	}

	// The phone: cards, the probes and the timeline readable.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulateTouch),
		chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(`#live.on`),
		chromedp.WaitReady(`svg.spark[data-key="app/server"] path.line[d*="L"]`)); err != nil {
		t.Fatal(err)
	}
	shoot(t, ctx, "status-phone.png")

	followLogs(t, ctx, ts.URL, ld)
}

// followLogs checks the log view of app/server at the browser's current
// size and then at desktop width.
func followLogs(t *testing.T, ctx context.Context, base string, ld *liveDaemon) {
	t.Helper()
	pid := ld.process(t, "app", "server").ExecPID
	printed := func() {
		t.Helper()
		if err := unix.Kill(pid, unix.SIGUSR2); err != nil { // "stdout after USR2", "stderr after USR2"
			t.Fatal(err)
		}
		ld.rep.Expect(t, "printed")
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/logs/app/server"),
		chromedp.WaitVisible(`#live.on`),
		chromedp.WaitVisible(`#lines .head.mark`), // the stream's tail is in: following
	); err != nil {
		t.Fatal(err)
	}
	printed()
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(`#lines .ln.out .t:not(:empty) + .s + .x`),
		chromedp.WaitVisible(`#lines .ln.err .t:not(:empty)`),
	); err != nil {
		t.Fatal(err)
	}
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#lines .ln')].map(l => l.className + "|" + l.querySelector(".x").textContent + "|" + (l.querySelector(".t").textContent ? "t" : ""))`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"ln out|an old line|", "ln out|stdout after USR2|t", "ln err|stderr after USR2|t"} {
		if !strings.Contains(got, want) {
			t.Errorf("log view lacks %q in:\n%s", want, got)
		}
	}
	count := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#lines .ln').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A few lines start at the top of the view, with no blank band above.
	gap, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
		`document.getElementById("lines").getBoundingClientRect().top - document.getElementById("log").getBoundingClientRect().top`))
	if err != nil || gap > 4 {
		t.Errorf("a band of %.0f px above the lines (%v)", gap, err)
	}
	// Search shows only the lines holding its text, the case ignored.
	if err := chromedp.Do(ctx, chromedp.SendKeys(`#search`, "STDERR after"),
		chromedp.Poll[chromedp.Void](`document.getElementById("logstate").textContent.includes("of")`)); err != nil {
		t.Fatal(err)
	}
	visible, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#lines .ln')].filter(l => l.offsetParent !== null).map(l => l.querySelector(".x").textContent)`))
	if err != nil || len(visible) == 0 || slices.ContainsFunc(visible, func(v string) bool { return v != "stderr after USR2" }) {
		t.Errorf("searching shows %q (%v)", visible, err)
	}
	shoot(t, ctx, fmt.Sprintf("logs-search-%s.png", viewportName(t, ctx)))
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
		`(() => { const s = document.getElementById("search"); s.value = ""; s.dispatchEvent(new Event("input")); return 0 })()`)); err != nil {
		t.Fatal(err)
	}
	// Paused, new lines are held (the state says so) and shown on resume.
	shown := count()
	if err := chromedp.Do(ctx, click(`#pause`)); err != nil {
		t.Fatal(err)
	}
	printed()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`#logstate`),
		chromedp.Poll[chromedp.Void](`document.getElementById("logstate").textContent.startsWith("paused: 2 new lines held")`)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != shown {
		t.Fatalf("paused, the view went from %d to %d lines", shown, n)
	}
	if err := chromedp.Do(ctx, click(`#pause`)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != shown+2 {
		t.Fatalf("resumed: %d lines, want %d", n, shown+2)
	}
	shoot(t, ctx, fmt.Sprintf("logs-%s.png", viewportName(t, ctx)))
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800), chromedp.Reload(), chromedp.WaitVisible(`#lines .head.mark`)); err != nil {
		t.Fatal(err)
	}
	printed()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`#lines .head.mark ~ .ln.err`)); err != nil {
		t.Fatal(err)
	}
	shoot(t, ctx, "logs-wide.png")
}

// viewportName is "phone" or "wide" by the page's width.
func viewportName(t *testing.T, ctx context.Context) string {
	w, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.innerWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if w < 760 {
		return "phone"
	}
	return "wide"
}
