package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// TestExecProbeRunsInsideTheSandbox: an exec probe runs in the process's
// isolation, as its user. The probe below is healthy only there: on the
// host it would see the other job and run as root. Its "sh" is found in
// the process's PATH inside; the daemon itself needs no helper program
// (its PATH is empty here). The users are one every machine has: a start
// as a vcap that does not exist fails.
func TestExecProbeRunsInsideTheSandbox(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r := isolatedRoot(t)
	l, write := r.Layout, r.Config
	write("web", `processes:
- name: web
  executable: /bin/sleep
  args: ["1000"]
  user: nobody
  health:
    readiness:
      exec: [sh, -c, "test ! -e `+l.JobDir("other")+` && test ! -e /var/vcap/jobs/other && test -d /var/vcap/jobs/web && test $(id -u) != 0"]
      period: 50ms
`)
	write("other", "processes:\n- name: other\n  executable: /bin/sleep\n  args: [\"1000\"]\n  user: nobody\n")
	d := runIsolated(t, r)
	web := func() control.ProcessStatus {
		st, _ := d.Status(context.Background())
		for _, p := range st.Processes {
			if p.Job == "web" {
				return p
			}
		}
		return control.ProcessStatus{}
	}
	guard := time.After(time.Minute) // a failure guard only
	for {
		changed := d.Changes()
		if web().Ready {
			return
		}
		select {
		case <-changed:
		case <-guard:
			p := web()
			if p.LastExit != nil {
				t.Fatalf("never ready: %+v, last exit %+v", p, *p.LastExit)
			}
			t.Fatalf("never ready: %+v", p)
		}
	}
}
