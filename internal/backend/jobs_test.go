package backend

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/job"
)

// TestLoadJobsKeepsWhatRuns: over the jobs in force, a job whose bpm.yml
// breaks, or is read empty while it is rewritten, keeps its configuration
// and says so; a removed job goes; a new one comes.
func TestLoadJobsKeepsWhatRuns(t *testing.T) {
	l, _ := boshpath.New(t.TempDir())
	write := func(name, yml string) {
		p := l.BPMConfig(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(yml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	for _, n := range []string{"broken", "emptied", "gone"} {
		write(n, "processes:\n- name: "+n+"\n  executable: /bin/true\n")
	}
	prev := LoadJobs(l, nil, map[string]*job.Job{}, log)
	if len(prev.Jobs) != 3 || len(prev.Problems) != 0 || len(prev.Failed) != 0 {
		t.Fatalf("first load: %+v", prev)
	}
	write("broken", "processes: [\n")
	write("emptied", "")
	write("new", "processes:\n- name: new\n  executable: /bin/true\n")
	if err := os.RemoveAll(l.JobDir("gone")); err != nil {
		t.Fatal(err)
	}
	next := LoadJobs(l, nil, prev.Jobs, log)
	var names []string
	for n := range next.Jobs {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"broken", "emptied", "new"}) || next.Jobs["broken"] != prev.Jobs["broken"] ||
		next.Jobs["emptied"] != prev.Jobs["emptied"] {
		t.Fatalf("jobs %v", names)
	}
	if !slices.Equal(next.Failed, []string{"broken"}) || len(next.Errs) != 1 {
		t.Fatalf("failed %v, errors %v", next.Failed, next.Errs)
	}
	kept := map[string]bool{}
	for _, p := range next.Problems {
		if p.Severity == "error" && strings.Contains(p.Message, "previous") {
			kept[p.Job] = true
		}
	}
	if !kept["broken"] || !kept["emptied"] || len(kept) != 2 {
		t.Fatalf("problems %+v", next.Problems)
	}
	if ev := ConfigEvent(next.Errs[0]); ev.Job != "broken" || ev.Kind != "config-error" {
		t.Fatalf("config event %+v", ev)
	}
}
