package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// TestPageShowsEveryField: the page shows each figure of a process, and
// escapes whatever the status carries.
func TestPageShowsEveryField(t *testing.T) {
	fb, l := newFake(t)
	p := &fb.st.Processes[0]
	p.Restarts, p.Health, p.Ready, p.Since = 3, "healthy", true, time.Now().Add(-90*time.Minute)
	p.LastExit = &control.Exit{Description: "killed by SIGKILL"}
	p.Warnings = []string{"not running as root <u>"}
	p.Output = control.Output{DroppedStderr: 2048}
	p.Probes = []control.ProbeResult{{Role: "liveness", OK: true, LatencyMS: 1.25}}
	fb.st.Processes = append(fb.st.Processes, control.ProcessStatus{Job: "app", Process: "idle", State: "weird\"><script>"})
	fb.st.Problems = []control.Problem{{Severity: "error", Job: "bad", File: "/r/jobs/bad/config/bpm.yml", Line: 7,
		Field: "processes[0].limits", Message: `<img src=x onerror="alert(1)">`}}
	_, ts := serve(t, fb, l)
	code, page := request(t, ts, "GET", "/", nil, true)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, page)
	}
	for _, want := range []string{
		`data-state="running"`, `class="state state-running"`, ">42<", "1h 30m", ">3<", "killed by SIGKILL",
		"healthy", "ready", "5.0 MiB", "1.50 s", "liveness: ok, 1.2 ms", "not running as root &lt;u&gt;",
		"dropped output: 0 B of stdout, 2.0 KiB of stderr",
		"/r/jobs/bad/config/bpm.yml:7: processes[0].limits: &lt;img src=x onerror=&#34;alert(1)&#34;&gt;",
		`class="state state-other"`, `/logs/app/server`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>", "<img", "<u>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page carries %q unescaped", bad)
		}
	}
}

func TestFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 59 * time.Second: "59s", 61 * time.Second: "1m 1s", 3*time.Hour + 5*time.Minute: "3h 5m",
		50 * time.Hour: "2d 2h", -time.Second: "0s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	for sec, want := range map[float64]string{0.031: "0.03 s", 12.54: "12.5 s", 200: "3m 20s"} {
		if got := formatCPU(sec); got != want {
			t.Errorf("formatCPU(%v) = %q, want %q", sec, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestCPURate: a stream's second render shows the CPU share since the
// first, and a new instance (another pid) starts over.
func TestCPURate(t *testing.T) {
	now := time.Now()
	st := control.Status{Processes: []control.ProcessStatus{{Job: "j", Process: "p", State: "running", PID: 9,
		Usage: &control.Usage{CPUSeconds: 10}}}}
	_, samples := buildView(st, "", now, nil)
	st.Processes[0].Usage = &control.Usage{CPUSeconds: 11}
	v, _ := buildView(st, "", now.Add(4*time.Second), samples)
	if got := v.Jobs[0].Processes[0].CPU; got != "11.0 s (25%)" {
		t.Fatalf("CPU %q", got)
	}
	st.Processes[0].PID = 10
	v, _ = buildView(st, "", now.Add(4*time.Second), samples)
	if got := v.Jobs[0].Processes[0].CPU; got != "11.0 s" {
		t.Fatalf("CPU of a new instance %q", got)
	}
}

// TestSharedWarningsAndSummary: a warning every process has is said once
// for every process, not on each; a warning one process has stays its
// own; the problems' summary counts them, the unsupervised apart, and a
// problem of one process names it.
func TestSharedWarningsAndSummary(t *testing.T) {
	iso := "isolation is switched off"
	st := control.Status{Processes: []control.ProcessStatus{
		{Job: "a", Process: "x", State: "running", Warnings: []string{iso, "cpu_quota not enforced"}},
		{Job: "a", Process: "y", State: "running", Warnings: []string{iso}},
	}, Problems: []control.Problem{
		{Severity: "error", Job: "bad", Message: "m"},
		{Severity: "warning", Job: "a", Process: "z", Kind: control.ProblemUnsupervised, Message: "not supervised"},
		{Severity: "warning", Job: "other", Kind: control.ProblemUnsupervised, Message: "not supervised"},
	}}
	v, _ := buildView(st, "tok", time.Now(), nil)
	if len(v.Shared) != 1 || v.Shared[0] != iso {
		t.Errorf("shared %q", v.Shared)
	}
	if w := v.Jobs[0].Processes[0].Warnings; len(w) != 1 || w[0] != "cpu_quota not enforced" {
		t.Errorf("x keeps %q", w)
	}
	if w := v.Jobs[0].Processes[1].Warnings; len(w) != 0 {
		t.Errorf("y keeps %q", w)
	}
	if v.Summary != "1 error, 2 warnings (2 not supervised)" {
		t.Errorf("summary %q", v.Summary)
	}
	fb, l := newFake(t)
	fb.st.Problems = st.Problems
	_, ts := serve(t, fb, l)
	_, page := request(t, ts, "GET", "/", nil, true)
	if !strings.Contains(page, "<b>warning</b> a/z: not supervised") || !strings.Contains(page, `kind-unsupervised`) {
		t.Errorf("the page does not name the unsupervised process:\n%s", page)
	}
}
