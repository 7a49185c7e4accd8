package backend

import (
	"errors"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/job"
)

// TestNotFound: a target that names nothing is answered with why: the
// job's configuration errors themselves (ErrConfig), its being left
// unsupervised, or the name closest to it, else the names.
func TestNotFound(t *testing.T) {
	l, _ := boshpath.New("/r")
	jobs := map[string]*job.Job{
		"web": {Name: "web", ConfigPath: "/r/jobs/web/config/bpm.yml", Processes: []job.Process{{Name: "server"}, {Name: "worker"}}},
		"db":  {Name: "db", ConfigPath: "/r/jobs/db/config/bpm.yml", Processes: []job.Process{{Name: "pg"}}},
	}
	probs := []control.Problem{
		{Severity: "error", Job: "bad", File: "/r/jobs/bad/config/bpm.yml", Line: 4, Field: "processes[0].limits.memory", Message: "byte quantity"},
		{Severity: "warning", Job: "other", Kind: control.ProblemUnsupervised, Message: "not supervised: no monit file starts it"},
	}
	for _, c := range []struct {
		job, proc string
		kind      error
		want      string
	}{
		{"bad", "", control.ErrConfig, "job bad cannot run: its configuration has errors: /r/jobs/bad/config/bpm.yml:4: processes[0].limits.memory: byte quantity"},
		{"other", "", control.ErrNotFound, "job other: not supervised: no monit file starts it"},
		{"wbe", "", control.ErrNotFound, `no job wbe is supervised (looked for /r/jobs/wbe/config/bpm.yml) (did you mean "web"?)`},
		{"zzz", "", control.ErrNotFound, "no job zzz is supervised (looked for /r/jobs/zzz/config/bpm.yml) (known jobs: db, web)"},
		{"web", "sever", control.ErrNotFound, `process "sever" not present in job configuration (/r/jobs/web/config/bpm.yml) (did you mean "server"?)`},
		{"web", "x", control.ErrNotFound, `process "x" not present in job configuration (/r/jobs/web/config/bpm.yml) (known processes of web: server, worker)`},
	} {
		err := NotFound(l, jobs, probs, c.job, c.proc)
		if !errors.Is(err, c.kind) || err.Error() != c.want {
			t.Errorf("%s/%s: %v\nwant %s", c.job, c.proc, err, c.want)
		}
	}
	if !errors.Is(NotFound(l, jobs, probs, "bad", ""), control.ErrNotFound) {
		t.Error("ErrConfig is not ErrNotFound too")
	}
}

// TestUnsupervised: with monit files deciding what runs, a job none of
// whose processes run is one warning, a process left out of a job that
// runs others is one each; errands are left alone.
func TestUnsupervised(t *testing.T) {
	jobs := map[string]*job.Job{
		"web":    {Name: "web", Processes: []job.Process{{Name: "a"}, {Name: "b"}}},
		"other":  {Name: "other", Processes: []job.Process{{Name: "o"}}},
		"errand": {Name: "errand", Errand: true, Processes: []job.Process{{Name: "e"}}},
	}
	run := map[supervise.ID]job.Process{{Job: "web", Process: "a"}: {}}
	got := Unsupervised(jobs, run)
	if len(got) != 2 || got[0].Job != "other" || got[0].Process != "" || got[1].Job != "web" || got[1].Process != "b" {
		t.Fatalf("%+v", got)
	}
	for _, p := range got {
		if p.Kind != control.ProblemUnsupervised || p.Severity != "warning" {
			t.Errorf("%+v", p)
		}
	}
}
