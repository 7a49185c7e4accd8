package systemd

import (
	"context"
	"path/filepath"
	"testing"
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
