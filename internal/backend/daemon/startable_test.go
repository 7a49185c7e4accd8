package daemon

import (
	"slices"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

// TestReloadKeepsRunningOnInputThatCannotStart rewrites a running job's
// bpm.yml with what bpm accepts and no start could do (issue 33): each
// reload rejects the file, naming its line and field, and the running
// process keeps its pid.
func TestReloadKeepsRunningOnInputThatCannotStart(t *testing.T) {
	h := newHarness(t)
	server := testroot.Proc{Name: "server", Behaviour: "serve"}
	h.root.Job("web", server)
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	before := h.status("web", "server")
	with := func(p testroot.Proc, yaml string, env ...string) testroot.Proc {
		p.YAML, p.Env = yaml, env
		return p
	}
	for _, tc := range []struct {
		name  string
		procs []testroot.Proc
		want  string
	}{
		{"a newline in a name", []testroot.Proc{server, {Name: `"a\nb"`, Behaviour: "serve"}},
			`: processes[1].name: name "a\nb" contains the control character U+000A`},
		{"a 300-byte name", []testroot.Proc{server, {Name: strings.Repeat("x", 300), Behaviour: "serve"}},
			": processes[1].name: name is 300 bytes: its log file NAME.stderr.log would be 311 bytes"},
		{"a 1 MB environment value", []testroot.Proc{with(server, "", "BIG="+strings.Repeat("s", 1<<20))},
			": processes[0].env.BIG: the value (not shown) is 1048576 bytes"},
		{"open_files: 0", []testroot.Proc{with(server, "  limits: {open_files: 0}\n")},
			": processes[0].limits.open_files: open_files must be at least 4, but got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.root.Job("web", tc.procs...)
			res, err := h.c.Reload(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Stopped)+len(res.Restarted)+len(res.Started) != 0 || !slices.Equal(res.Rejected, []string{"web"}) {
				t.Fatalf("reload touched processes: %+v", res)
			}
			var all []string
			for _, p := range res.Problems {
				all = append(all, p.File+":"+itoa(p.Line)+": "+p.Field+": "+p.Message)
			}
			found := slices.ContainsFunc(all, func(s string) bool {
				return strings.HasPrefix(s, h.layout.BPMConfig("web")+":") && strings.Contains(s, tc.want)
			})
			if !found {
				t.Fatalf("problems do not name %q:\n%s", tc.want, strings.Join(all, "\n"))
			}
			if got := h.status("web", "server"); got.PID != before.PID || got.State != "running" {
				t.Fatalf("process harmed: %+v", got)
			}
		})
	}
}
