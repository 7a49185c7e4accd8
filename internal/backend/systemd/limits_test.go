package systemd

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vigil-bosh/vigil/control"
)

// TestStatusCarriesMemoryLimit: a process's limits.memory is in its
// status as bytes on this back end too; a process without one has 0.
func TestStatusCarriesMemoryLimit(t *testing.T) {
	h, d := newFakeHost(t)
	exe := filepath.Join(h.l.Root(), "packages", "mem", "bin", "hog")
	h.root.Write(exe, "#!/bin/sh\n", 0o755)
	h.root.Config("mem", "processes:\n- name: hog\n  executable: "+exe+"\n  limits: {memory: 1G}\n")
	if _, err := d.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := states(t, d)
	if got := st["mem/hog"].MemoryLimitBytes; got != 1<<30 {
		t.Errorf("mem/hog: memory limit %d, want %d", got, 1<<30)
	}
	if got := st["web/web"].MemoryLimitBytes; got != 0 {
		t.Errorf("web/web: memory limit %d, want none", got)
	}
}

// TestOperatorActionsAreEvents: on this back end too, an action, a signal
// and a reload asked by someone are action events naming what and who;
// the same asked by no one (the daemon itself) are none.
func TestOperatorActionsAreEvents(t *testing.T) {
	_, d := newFakeHost(t)
	ctx := context.Background()
	if _, err := d.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	events, err := d.Events(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	asked := control.WithRequester(ctx, "page user admin")
	if _, err := d.Act(asked, control.ActionRequest{Action: control.ActionStop, Job: "web", Process: "web"}); err != nil {
		t.Fatal(err)
	}
	_ = d.Signal(asked, control.SignalRequest{Job: "web", Process: "worker", Signal: "HUP"}) // no init runs: it fails, but was asked
	if _, err := d.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Reload(asked); err != nil {
		t.Fatal(err)
	}
	want := []string{"web/web: stop, asked by page user admin", "web/worker: signal HUP, asked by page user admin",
		"/: reload, asked by page user admin"}
	var got []string
	for len(got) < len(want) {
		ev := <-events
		if ev.Kind == control.EventAction {
			got = append(got, ev.Job+"/"+ev.Process+": "+ev.Message)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("action events %q, want %q", got, want)
	}
}
