package supervise

import (
	"testing"
	"time"
)

// BenchmarkNext measures one transition of the pure state machine (an exit
// of a running process, deciding an immediate restart).
func BenchmarkNext(b *testing.B) {
	m := in(Running)
	ev := event{kind: evExit, exit: Exit{Code: 1}}
	now := t0.Add(time.Minute)
	for b.Loop() {
		_, _ = next(m, ev, now, Timing{})
	}
}

// BenchmarkSnapshot measures reading a supervisor's status, what a status
// query does once per process.
func BenchmarkSnapshot(b *testing.B) {
	s := New(Config{ID: ID{"job", "proc"}})
	for b.Loop() {
		_ = s.Status()
	}
}
