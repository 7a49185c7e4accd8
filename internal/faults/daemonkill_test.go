package faults

import (
	"testing"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/container"
	"github.com/vigil-bosh/vigil/internal/lifecycle"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// The daemon owns nothing a running process needs: killed outright, it
// leaves its inits and their executables running, and the next daemon
// adopts each from its pid file. A start it had in flight is abandoned by
// its init (as bpm never starts the container when bpm start dies during
// the hook), and the next daemon starts that process afresh: every wanted
// process then runs exactly once.

// TestKillDuringStart: the daemon dies while a process's pre_start hook
// runs. The hook's init gives up and exits (its hook killed, no
// executable started); the next daemon adopts the running process, starts
// the other one once, and nothing is left over.
func TestKillDuringStart(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "steady", behaviour: "serve"}, tp{name: "slow", behaviour: "serve", hook: true})
	r.startDaemon()
	steady := r.rep.Expect(t, "ready")
	hook := r.rep.Expect(t, "hook").Fields() // the first daemon's start of slow, blocked
	kids := r.killDaemon()
	r.waitGone(hook[1]) // the init whose start was cut short ends...
	r.waitGone(hook[0]) // ...and so does its hook
	r.orphansSettle(kids)
	if log := r.layout.StderrLog("web", "slow"); !testproc.FileContains(log, "the supervisor went away while the prestart hook ran")() {
		t.Errorf("%s does not say why the start was abandoned", log)
	}

	r.startDaemon()
	r.rep.Expect(t, "hook")
	r.release()
	r.settled()
	r.rep.Expect(t, "ready")
	if st := r.once("web", "steady"); st.ExecPID != steady.PID {
		t.Fatalf("steady was not adopted: %d before, %+v after", steady.PID, st)
	}
	r.once("web", "slow")
	r.noZombies()
}

// TestKillDuringStop: the daemon dies mid-ladder (the process ignores
// SIGTERM). The process keeps running under its init; the next daemon
// adopts it (same init, same executable, nothing doubled) and, as the stop
// was recorded before it began, finishes it: the job ends as asked.
func TestKillDuringStop(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "steady", behaviour: "serve"},
		tp{name: "stubborn", behaviour: "serve", env: []string{"TESTPROC_IGNORE=TERM"}})
	r.up(2, envStop+"=1h") // the ladder waits at SIGTERM until the daemon dies
	before := r.once("web", "stubborn")
	stopped := make(chan error, 1)
	go func() {
		_, err := r.client().Act(t.Context(), control.ActionRequest{Action: control.ActionStop, Job: "web", Process: "stubborn"})
		stopped <- err
	}()
	if ln := r.rep.Expect(t, "signal"); ln.PID != before.ExecPID || ln.Text != "signal TERM" {
		t.Fatalf("first signal: %+v", ln)
	}
	kids := r.killDaemon()
	if err := <-stopped; err == nil {
		t.Fatal("the stop succeeded although its daemon was killed")
	}
	r.orphansSettle(kids)

	// The next daemon adopts the process and finishes the stop its
	// predecessor recorded before dying: the ladder again from TERM, QUIT
	// 1 s later (and 1 s for QUIT to be reported before the kill).
	r.up(0, envStop+"=1s")
	for _, sig := range []string{"signal TERM", "signal QUIT"} {
		if ln := r.rep.Expect(t, "signal"); ln.PID != before.ExecPID || ln.Text != sig {
			t.Fatalf("want %s to %d, got %+v", sig, before.ExecPID, ln)
		}
	}
	r.waitGone(before.PID)
	if got := r.instances("web", "stubborn"); len(got) != 0 || r.pidFile("web", "stubborn") != 0 {
		t.Fatalf("after the stop: instances %v, pid file %d", got, r.pidFile("web", "stubborn"))
	}
	r.waitFor("the stop to settle", func() bool { return r.status("web", "stubborn").State == "stopped" })
	r.once("web", "steady")
	r.noZombies()
}

// TestKillDuringReload: the daemon dies while a reload restarts a changed
// process whose new pre_start hook blocks. The old instance was stopped,
// the new one's init gives up; the next daemon starts the new
// configuration once.
func TestKillDuringReload(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "steady", behaviour: "serve"}, tp{name: "changed", behaviour: "serve"})
	r.up(2)
	steady := r.once("web", "steady")
	old := r.once("web", "changed")
	r.job("web", tp{name: "steady", behaviour: "serve"}, tp{name: "changed", behaviour: "serve", hook: true})
	reloaded := make(chan error, 1)
	go func() { _, err := r.client().Reload(t.Context()); reloaded <- err }()
	if ln := r.rep.Expect(t, "signal"); ln.PID != old.ExecPID || ln.Text != "signal TERM" {
		t.Fatalf("the old instance got %+v", ln)
	}
	hook := r.rep.Expect(t, "hook").Fields()
	kids := r.killDaemon()
	if err := <-reloaded; err == nil {
		t.Fatal("the reload succeeded although its daemon was killed")
	}
	r.waitGone(hook[1])
	r.waitGone(hook[0])
	r.orphansSettle(kids)

	r.startDaemon()
	r.rep.Expect(t, "hook")
	r.release()
	r.settled()
	if st := r.once("web", "changed"); st.PID == old.PID {
		t.Fatalf("changed still runs its old instance: %+v", st)
	}
	r.same(steady) // adopted
	r.noZombies()
}

// TestKillDuringDrain: the daemon dies while `vigil drain` runs a job's
// drain script. The drain finishes (the daemon is only needed before the
// scripts, to unmonitor), the processes keep running, and the next daemon
// adopts each once.
func TestKillDuringDrain(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "steady", behaviour: "serve"})
	r.write(r.layout.JobBinDir("web")+"/drain", "#!/bin/sh\n"+
		"TESTPROC=gate TESTPROC_GATE="+r.gate+" TESTPROC_SOCK="+r.rep.Path+" "+r.self+" >&2\necho 0\n", 0o755)
	r.up(1)
	before := r.once("web", "steady")
	drained := make(chan error, 1)
	go func() {
		drained <- container.DrainAll(t.Context(), r.client(), lifecycle.DrainOptions{Layout: r.layout, Kind: lifecycle.Shutdown})
	}()
	r.rep.Expect(t, "hook") // the drain script runs
	kids := r.killDaemon()
	r.release()
	if err := <-drained; err != nil {
		t.Fatalf("drain: %v", err)
	}
	r.orphansSettle(kids)
	r.up(0)
	r.same(before) // adopted
	r.noZombies()
}
