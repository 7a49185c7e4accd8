package daemon

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/pidfile"
	"github.com/vigil-bosh/vigil/supervise"
)

// TestPlantedSymlinksAreNotFollowed plants symlinks where vigil writes: a
// process's log files (in the job's own log directory, which its user
// owns), its pid file, and the monit state file. None is followed: the
// logs are refused with bpm's text (the process does not start), the pid
// file and the state file replace the link.
func TestPlantedSymlinksAreNotFollowed(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.writeJob("planted", pr{"server", "serve", nil})
	checks := []func(){
		testproc.PlantSymlink(t, h.layout.StdoutLog("planted", "server"), false),
		testproc.PlantSymlink(t, h.layout.StderrLog("planted", "server"), true),
		testproc.PlantSymlink(t, h.layout.PidFile("web", "server"), false),
	}
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	h.waitFor("the planted process to fail", func() bool { return h.status("planted", "server").LastExit != nil })
	st := h.status("planted", "server")
	if want := "refusing to open symlink at " + h.layout.StdoutLog("planted", "server"); !strings.Contains(st.LastExit.Description, want) {
		t.Errorf("planted: %+v, want %q", st.LastExit, want)
	}
	if pid, err := pidfile.Read(h.layout.PidFile("web", "server")); err != nil || pid != h.status("web", "server").PID {
		t.Errorf("pid file %d %v", pid, err)
	}

	state := testproc.PlantSymlink(t, h.d.monitStatePath(), false)
	if err := h.d.saveMonitState(monitState{Unmonitored: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	state()
	if fi, err := os.Lstat(h.d.monitStatePath()); err != nil || fi.Mode() != 0o600 {
		t.Errorf("monit state file: %v %v", fi, err)
	}
	if got := h.d.loadMonitState(); !slices.Equal(got.Unmonitored, []string{"web"}) {
		t.Errorf("monit state read back: %+v", got)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	for _, check := range checks {
		check()
	}
}
