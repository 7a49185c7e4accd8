package web

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// TestStateDetails: the page says when the last exit was, when a backoff
// tries again, every probe's result on the page itself (not in a hover),
// a stop that was asked for apart from a failure, the memory limit, a
// process that runs unisolated (isolation: host), and enables only the
// buttons a state can use.
func TestStateDetails(t *testing.T) {
	fb, l := newFake(t)
	now := time.Now()
	fb.st.Processes = []control.ProcessStatus{
		{Job: "app", Process: "server", State: "running", Wanted: "up", PID: 42, Since: now.Add(-time.Minute),
			LastExit:         &control.Exit{Description: "exited with code 1", At: now.Add(-(4*time.Minute + 11*time.Second))},
			MemoryLimitBytes: 512 << 20, Usage: &control.Usage{RSSBytes: 100 << 20}, Isolation: "host",
			Probes: []control.ProbeResult{{Role: "liveness", OK: false, Failures: 2, LatencyMS: 1000, Message: "connection refused"},
				{Role: "readiness", OK: true, LatencyMS: 0.5}}},
		{Job: "app", Process: "loop", State: "backoff", Wanted: "up", RetryAt: now.Add(90 * time.Second)},
		{Job: "app", Process: "done", State: "stopped", Wanted: "down"},
		{Job: "app", Process: "once", State: "stopped", Wanted: "up"},
		{Job: "app", Process: "dead", State: "failed", Wanted: "up"},
		{Job: "idle", Process: "x", State: "stopped", Wanted: "down"},
	}
	_, ts := serve(t, fb, l)
	code, page := request(t, ts, "GET", "/", nil, true)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, page)
	}
	row := func(proc string) string {
		t.Helper()
		m := regexp.MustCompile(`(?s)<tr class="proc" data-job="[^"]+" data-process="` + proc + `".*?</tr>`).FindString(page)
		if m == "" {
			t.Fatalf("no row of %s in:\n%s", proc, page)
		}
		return m
	}
	buttons := func(html string) string {
		var on []string
		for _, b := range regexp.MustCompile(`<button name="action" value="(\w+)"( disabled)?`).FindAllStringSubmatch(html, -1) {
			if b[2] == "" {
				on = append(on, b[1])
			}
		}
		return strings.Join(on, ",")
	}
	for _, c := range []struct {
		proc    string
		want    []string
		buttons string
	}{
		{"server", []string{`exited with code 1 <span class="ago" data-age-ms="251`, "4m 11s ago",
			`<li class="bad">liveness: failing (2 in a row), 1000.0 ms: connection refused</li>`,
			`<li class="ok">readiness: ok, 0.5 ms</li>`, `<span class="limit">of 512.0 MiB</span>`, `data-limit="536870912"`,
			`>server</a> <span class="tag" title="isolation: host: it runs in the host's namespaces, outside bpm's sandbox">unisolated</span>`}, "stop,restart"},
		{"loop", []string{`next try in <span class="countdown" data-in-ms="`}, "start,stop,restart"},
		{"done", []string{`data-why="by an operator"`, `<span class="why">by an operator</span>`}, "start"},
		{"once", []string{`data-why="not restarted"`}, "start,stop,restart"},
		{"dead", []string{`data-why="gave up"`, `<span class="why">gave up</span>`}, "start,stop,restart"},
	} {
		r := row(c.proc)
		for _, w := range c.want {
			if !strings.Contains(r, w) {
				t.Errorf("%s: row lacks %q:\n%s", c.proc, w, r)
			}
		}
		if got := buttons(r); got != c.buttons {
			t.Errorf("%s: buttons enabled %q, want %q", c.proc, got, c.buttons)
		}
	}
	if !regexp.MustCompile(`data-in-ms="(89\d{3}|90000)">1m (29|30)s<`).MatchString(row("loop")) {
		t.Errorf("backoff countdown:\n%s", row("loop"))
	}
	if n := strings.Count(page, ">unisolated</span>"); n != 1 {
		t.Errorf("%d processes marked unisolated, want server alone", n)
	}
	if strings.Contains(page, ` title="liveness`) {
		t.Error("probe results are still in a hover title")
	}
	// A job's buttons: what any of its processes can use.
	idle := regexp.MustCompile(`(?s)<tbody class="job" data-job="idle">.*?</tr>`).FindString(page)
	if got := buttons(idle); got != "start" {
		t.Errorf("job idle: buttons enabled %q, want start", got)
	}
}

// TestInstanceIdentity: the page names the BOSH instance from the agent's
// spec (read again when it changes), and the host without one.
func TestInstanceIdentity(t *testing.T) {
	fb, l := newFake(t)
	_, ts := serve(t, fb, l)
	host := func() string {
		_, page := request(t, ts, "GET", "/", nil, true)
		return regexp.MustCompile(`<span class="who">(.*?)</span>`).FindStringSubmatch(page)[1]
	}
	if got := host(); got == "" || strings.Contains(got, "·") {
		t.Fatalf("without a spec the header says %q", got)
	}
	writeFile(t, l.AgentSpec(), `{"deployment":"cf","job":{"name":"router"},"index":0,"id":"abc","az":"z2"}`)
	if got := host(); got != "cf · router/abc" {
		t.Fatalf("header %q", got)
	}
	writeFile(t, l.AgentSpec(), `{"deployment":"cf","name":"router","index":1}`) // older agents: no id
	if got := host(); got != "cf · router/1" {
		t.Fatalf("header after the spec changed %q", got)
	}
	writeFile(t, l.AgentSpec(), `{"deployment": `)
	if got := host(); strings.Contains(got, "·") {
		t.Fatalf("a broken spec still names %q", got)
	}
}
