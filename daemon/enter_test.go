package daemon

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

// TestExecProbeRunsInsideTheSandbox: an exec probe runs in the process's
// isolation, as its user. The probe below is healthy only there: on the
// host it would see the other job and run as root.
func TestExecProbeRunsInsideTheSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolation needs root")
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		t.Skip("entering a sandbox needs nsenter (util-linux)")
	}
	r := testroot.New(t, "/run") // not under /tmp: the sandbox has its own
	os.Chmod(r.Layout.Root(), 0o755)
	l, write := r.Layout, r.Config
	write("web", `processes:
- name: web
  executable: /bin/sleep
  args: ["1000"]
  health:
    readiness:
      exec: [/bin/sh, -c, "test ! -e `+l.JobDir("other")+` && test $(id -u) != 0"]
      period: 50ms
`)
	write("other", "processes:\n- name: other\n  executable: /bin/sleep\n  args: [\"1000\"]\n")
	d, err := New(Config{Layout: l, Init: r.Self})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-d.Ready()
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
