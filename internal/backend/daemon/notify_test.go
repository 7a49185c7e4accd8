package daemon

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// writeNotify writes a job whose process runs testproc's "notify".
func (h *harness) writeNotify(job, extra string, env ...string) {
	h.writeOne(job, "server", "notify", extra, env...)
}

func TestNotifyReadiness(t *testing.T) {
	for _, tt := range []struct {
		name, notify string
		env          []string
	}{
		{"systemd", "systemd", nil},
		{"fd", "fd:5", []string{testproc.EnvNotifyFD + "=5"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.writeNotify("web", "  health: {notify: \""+tt.notify+"\"}\n", tt.env...)
			h.start(supervise.Timing{})
			pid := h.rep.Expect(t, "ready").PID
			if st := h.status("web", "server"); st.State != "running" || st.Ready {
				t.Fatalf("ready before it said so: %+v", st)
			}
			unix.Kill(pid, unix.SIGUSR1)
			h.rep.Expect(t, "notified")
			h.waitFor("ready", func() bool { return h.status("web", "server").Ready })
		})
	}
}

// TestNotifyWatchdog: with a watchdog, a process that stops sending
// WATCHDOG=1 is restarted.
func TestNotifyWatchdog(t *testing.T) {
	h := newHarness(t)
	h.writeNotify("web", "  health: {notify: systemd, watchdog: 300ms}\n")
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready").PID
	unix.Kill(first, unix.SIGUSR1) // READY=1 arms the watchdog; no keep-alive follows
	h.rep.Expect(t, "notified")
	h.rep.Expect(t, "signal SIGTERM")
	if second := h.rep.Expect(t, "ready").PID; second == first {
		t.Fatal("no new process after the watchdog expired")
	}
	h.waitFor("the restart", func() bool { return h.status("web", "server").Restarts == 1 })
}
