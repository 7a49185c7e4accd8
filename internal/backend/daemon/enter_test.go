package daemon

import (
	"context"
	"os"
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
	awaitReady(t, runIsolated(t, r), "web")
}

// awaitReady waits until the daemon's process of job is ready, and
// returns its status; it fails t with the status (and the process's
// stderr log) after a minute, a failure guard only.
func awaitReady(t *testing.T, d *Daemon, job string) control.ProcessStatus {
	t.Helper()
	of := func() control.ProcessStatus {
		st, _ := d.Status(context.Background())
		for _, p := range st.Processes {
			if p.Job == job {
				return p
			}
		}
		return control.ProcessStatus{}
	}
	guard := time.After(time.Minute)
	for {
		changed := d.Changes()
		if p := of(); p.Ready {
			return p
		}
		select {
		case <-changed:
		case <-guard:
			p := of()
			stderr, _ := os.ReadFile(d.cfg.Layout.StderrLog(job, p.Process))
			if p.LastExit != nil {
				t.Fatalf("never ready: %+v, last exit %+v; its stderr: %s", p, *p.LastExit, stderr)
			}
			t.Fatalf("never ready: %+v; its stderr: %s", p, stderr)
		}
	}
}
