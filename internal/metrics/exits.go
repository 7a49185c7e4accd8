package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/vigil-bosh/vigil/control"
)

// reason is why a process exited, for vigil_process_exits_total.
type reason int

const (
	reasonSuccess    reason = iota // exit code 0
	reasonFailure                  // another exit code
	reasonSignal                   // a signal (not the kernel's OOM killer)
	reasonOOM                      // the kernel's OOM killer
	reasonStop                     // ended by a stop that was asked for
	reasonSpawnError               // it could not be started
	reasonCount
)

func (r reason) String() string {
	return [...]string{"success", "failure", "signal", "oom", "stop", "spawn_error"}[r]
}

// exitTrack is what the metrics know of one process's exits: their
// counts by reason, and whether a stop is under way (its exit is a stop's).
type exitTrack struct {
	counts   [reasonCount]int
	stopping bool
}

// observeExit counts the exit or stop-related event ev of one process.
func (t *exitTrack) observe(ev control.Event) {
	switch ev.Kind {
	case control.EventStopping:
		t.stopping = true
	case control.EventStopped, control.EventStarted, control.EventRestarted, control.EventGaveUp:
		t.stopping = false
	case control.EventOOMKilled:
		t.counts[reasonOOM]++
	case control.EventExited:
		t.counts[exitReason(ev.Exit, t.stopping)]++
	}
}

func exitReason(e *control.Exit, stopping bool) reason {
	switch {
	case stopping:
		return reasonStop
	case e == nil:
		return reasonFailure
	case e.Error != "":
		return reasonSpawnError
	case e.OOM:
		return reasonOOM
	case e.Signal != "":
		return reasonSignal
	case e.Code == 0:
		return reasonSuccess
	}
	return reasonFailure
}

// build is what vigil_build_info says of the binary.
type build struct{ revision, goVersion string }

// readBuild reads the revision the binary was built from (its VCS stamp,
// "unknown" without one) and the Go version.
func readBuild() build {
	b := build{revision: "unknown", goVersion: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				b.revision = s.Value
			}
		}
	}
	return b
}
