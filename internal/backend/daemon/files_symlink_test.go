package daemon

import (
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestPlantedSymlinksAreNotFollowed plants symlinks where vigil writes: a
// process's log files (in the job's own log directory, which its user
// owns) and its pid file (the monit state file: monitext's
// TestStateFileReplacesPlantedSymlink). None is followed: the logs are
// refused with bpm's text (the process does not start), the pid file
// replaces the link.
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

	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	for _, check := range checks {
		check()
	}
}
