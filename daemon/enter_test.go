package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// TestExecProbeRunsInsideTheSandbox: an exec probe runs in the process's
// isolation, as its user. The probe below is healthy only there: on the
// host it would see the other job and run as root. The user is one every
// machine has: a start as a vcap that does not exist fails.
func TestExecProbeRunsInsideTheSandbox(t *testing.T) {
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Skip("entering a sandbox needs nsenter (util-linux)")
	}
	l := isolatedRoot(t)
	write := func(job, yml string) {
		p := l.BPMConfig(job)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(yml), 0o644)
	}
	write("web", `processes:
- name: web
  executable: /bin/sleep
  args: ["1000"]
  user: nobody
  health:
    readiness:
      exec: [/bin/sh, -c, "test ! -e `+l.JobDir("other")+` && test $(id -u) != 0"]
      period: 50ms
`)
	write("other", "processes:\n- name: other\n  executable: /bin/sleep\n  args: [\"1000\"]\n  user: nobody\n")
	d := runIsolated(t, l)
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
			t.Fatalf("never ready: %+v", web())
		}
	}
}
