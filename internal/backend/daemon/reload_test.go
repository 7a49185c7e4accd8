package daemon

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

func TestReloadRestartsOnlyWhatChanged(t *testing.T) {
	h := newHarness(t)
	h.writeJob("a", pr{"one", "serve", nil}, pr{"two", "serve", nil})
	h.writeJob("b", pr{"b", "serve", nil})
	h.start(supervise.Timing{})
	ready := map[int]bool{}
	for range 3 {
		ready[h.rep.Expect(t, "ready").PID] = true
	}
	one, two, b := h.status("a", "one"), h.status("a", "two"), h.status("b", "b")

	h.writeJob("a", pr{"one", "serve", nil}, pr{"two", "serve", []string{"NEW=1"}})
	os.RemoveAll(h.layout.JobDir("b"))
	h.writeJob("c", pr{"c", "serve", nil})
	want := control.ReloadResult{Started: []string{"c/c"}, Stopped: []string{"b/b"},
		Restarted: []string{"a/two"}, Unchanged: []string{"a/one"}}
	same := func(res control.ReloadResult) bool {
		return slices.Equal(res.Started, want.Started) && slices.Equal(res.Stopped, want.Stopped) &&
			slices.Equal(res.Restarted, want.Restarted) && slices.Equal(res.Unchanged, want.Unchanged)
	}
	// The plan says what the reload then does, and does none of it.
	plan, err := h.c.PlanReload(t.Context())
	if err != nil || !same(plan) || !plan.DryRun {
		t.Fatalf("plan %+v %v, want %+v", plan, err, want)
	}
	if got := h.status("a", "two"); got.PID != two.PID || h.status("b", "b").State != "running" {
		t.Fatal("the plan touched a process")
	}
	res, err := h.c.Reload(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !same(res) || res.DryRun {
		t.Fatalf("reload %+v, want %+v", res, want)
	}
	if got := h.status("a", "one"); got.PID != one.PID || got.ExecPID != one.ExecPID || got.State != "running" {
		t.Fatalf("unchanged process touched: %+v -> %+v", one, got)
	}
	if got := h.status("a", "two"); got.PID == two.PID || got.State != "running" {
		t.Fatalf("changed process not restarted: %+v -> %+v", two, got)
	}
	if alive(b.ExecPID) || alive(two.ExecPID) {
		t.Fatal("a removed or replaced process still runs")
	}
	if h.status("c", "c").State != "running" {
		t.Fatal("added job not running")
	}
	st, _ := h.c.Status(t.Context())
	if len(st.Processes) != 3 {
		t.Fatalf("processes after reload: %+v", st.Processes)
	}
	if h.d.events.Tracks(supervise.ID{Job: "b", Process: "b"}) {
		t.Fatal("the event hub still keeps the removed process b/b")
	}
}

// TestReloadKeepsRunningOnBadConfig breaks a running job's bpm.yml in two
// ways; each reload reports the error and leaves the process alone.
func TestReloadKeepsRunningOnBadConfig(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	before := h.status("web", "server")
	breakages := []struct {
		name   string
		breaks func()
		want   string
	}{
		{"malformed yaml", func() { h.writeFile("web", "processes:\n- name: server\n  executable: [unclosed\n") },
			"did not find expected"},
		{"wrong type", func() { h.writeFile("web", "processes:\n- name: server\n  executable: /bin/true\n  args: {a: b}\n") },
			"bpm.yml:4: processes[0].args"},
		{"unreadable file", func() {
			os.Remove(h.layout.BPMConfig("web"))
			os.Mkdir(h.layout.BPMConfig("web"), 0o755)
		}, "cannot read"},
	}
	for _, b := range breakages {
		t.Run(b.name, func(t *testing.T) {
			os.RemoveAll(h.layout.BPMConfig("web"))
			b.breaks()
			res, err := h.c.Reload(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Stopped)+len(res.Restarted)+len(res.Started) != 0 || !slices.Equal(res.Unchanged, []string{"web/server"}) ||
				!slices.Equal(res.Rejected, []string{"web"}) {
				t.Fatalf("reload touched processes: %+v", res)
			}
			var lines []string
			for _, p := range res.Problems {
				lines = append(lines, p.File+":"+itoa(p.Line)+": "+p.Field+": "+p.Message)
			}
			all := strings.Join(lines, "\n")
			if !strings.Contains(all, b.want) || !strings.Contains(all, "keeps running with its previous one") {
				t.Fatalf("problems do not name %q:\n%s", b.want, all)
			}
			if got := h.status("web", "server"); got.PID != before.PID || got.State != "running" {
				t.Fatalf("process harmed: %+v", got)
			}
		})
	}
}

func TestInvalidJobDoesNotStopOthers(t *testing.T) {
	h := newHarness(t)
	h.writeJob("good", pr{"good", "serve", nil})
	h.writeFile("bad", "processes:\n- name: bad\n  executable: /does/not/exist\n  shutdown_signal: KILL\n")
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	st, err := h.c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Processes) != 1 || st.Processes[0].State != "running" {
		t.Fatalf("processes %+v", st.Processes)
	}
	var fields []string
	for _, p := range st.Problems {
		if p.Severity == "error" && p.Job == "bad" && p.Line > 0 {
			fields = append(fields, p.Field)
		}
	}
	if !slices.Equal(fields, []string{"processes[0].executable", "processes[0].shutdown_signal"}) {
		t.Fatalf("problems %+v", st.Problems)
	}
	// A start says the errors themselves (ErrConfig, which is
	// ErrNotFound too: bpm acts on its own then, as before).
	_, err = h.c.Act(t.Context(), control.ActionRequest{Action: "start", Job: "bad"})
	if !errors.Is(err, control.ErrConfig) || !errors.Is(err, control.ErrNotFound) ||
		!strings.Contains(err.Error(), "job bad cannot run: its configuration has errors: ") ||
		!strings.Contains(err.Error(), "bpm.yml:4: processes[0].shutdown_signal: shutdown signal should either be") {
		t.Fatalf("start of an invalid job: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestCheck reads a root as a daemon's first load would, with no daemon:
// the same problems, the jobs rejected, what would start, nothing run.
func TestCheck(t *testing.T) {
	h := newHarness(t)
	h.writeJob("good", pr{"good", "serve", nil})
	h.writeFile("bad", "processes:\n- name: bad\n  executable: /does/not/exist\n  shutdown_signal: KILL\n")
	res, err := Check(Config{Layout: h.layout})
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, p := range res.Problems {
		if p.Severity == "error" && p.Job == "bad" && p.Line > 0 {
			fields = append(fields, p.Field)
		}
	}
	if !slices.Equal(res.Started, []string{"good/good"}) || !slices.Equal(res.Rejected, []string{"bad"}) || !res.DryRun ||
		!slices.Equal(fields, []string{"processes[0].executable", "processes[0].shutdown_signal"}) {
		t.Fatalf("check %+v", res)
	}
	if _, err := os.Stat(h.layout.PidFile("good", "good")); !os.IsNotExist(err) {
		t.Fatalf("the check started something: %v", err)
	}
}
