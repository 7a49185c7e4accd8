package systemd

import (
	"context"
	"testing"

	"github.com/vigil-bosh/vigil/internal/monit"
)

// monit's engine drives a bpm process's unit through the driver and reads
// its status from the snapshot.
func TestDriverUnit(t *testing.T) {
	h, d := newFakeHost(t)
	ctx := context.Background()
	if _, err := d.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	u := &driverUnit{d: d, job: "web", proc: "worker"}
	if st := u.Status(); st.Monitor != monit.NotMonitored || st.Running {
		t.Errorf("before any status: %+v", st)
	}
	if _, err := d.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if st := u.Status(); st.Monitor != monit.Monitored || !st.Running || st.Events != 0 {
		t.Errorf("running: %+v", st)
	}
	h.calls(t)
	if err := u.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if st := u.Status(); st.Monitor != monit.NotMonitored || st.Running {
		t.Errorf("after monit stop: %+v", st)
	}
	h.setState(t, "vigil-web-worker.service", "failed failed 5")
	if err := u.Monitor(ctx); err != nil {
		t.Fatal(err)
	}
	if st := u.Status(); st.Monitor != monit.Monitored || !st.Running {
		t.Errorf("after monitor: %+v", st)
	}
	h.setState(t, "vigil-web-worker.service", "failed failed 5")
	if _, err := d.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if st := u.Status(); st.Events != monit.EventExec || st.Running {
		t.Errorf("failed: %+v", st)
	}
}
