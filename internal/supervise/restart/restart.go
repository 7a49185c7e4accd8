// Package restart decides when a supervised process that exited is started
// again. It is pure: the caller passes the times, so every decision can be
// table-tested without a clock.
package restart

import "time"

// Defaults for the zero values of Policy's fields.
const (
	DefaultInitial    = 100 * time.Millisecond
	DefaultMax        = time.Minute
	DefaultResetAfter = 10 * time.Second
)

// Policy is an exponential backoff with an optional limit. The zero value is
// usable: the first restart is immediate, repeated quick failures wait 100ms,
// 200ms, 400ms ... up to 1m, and a run of at least 10s resets the sequence.
type Policy struct {
	Initial    time.Duration // first non-zero delay; zero means DefaultInitial
	Max        time.Duration // cap on the delay; zero means DefaultMax
	ResetAfter time.Duration // a run this long is healthy; zero means DefaultResetAfter
	Limit      Limit         // zero value: never give up
	Mode       Mode          // which exits are restarted; zero means Always
}

// Mode says which exits of a process are restarted.
type Mode int

// The modes. Always is the zero value.
const (
	Always    Mode = iota // every exit
	OnFailure             // only an exit that is not a clean exit 0
	Never                 // none: the process stays down
)

// Then is what happens once the limit is reached.
type Then int

// The outcomes. GiveUp is the zero value.
const (
	GiveUp       Then = iota // a dead process stays down and failed; a failing probe stops it for good
	LeaveRunning             // failing probes no longer restart it; a running process is never stopped
	Exec                     // run Limit.Exec, then as LeaveRunning
)

// Limit gives up once Count restarts have happened within the window Within.
// A Count of zero disables the limit.
type Limit struct {
	Count  int
	Within time.Duration
	Then   Then
	Exec   []string // the command for Then == Exec
}

// History is what the policy remembers between exits. The zero value is a
// process that never failed. It is a value: Next returns the new one.
type History struct {
	quick    int         // consecutive exits that came too soon after the start
	restarts []time.Time // restart times inside the limit's window, oldest first
}

// Quick reports the number of consecutive quick failures.
func (h History) Quick() int { return h.quick }

// Decision is what to do about one exit.
type Decision struct {
	Delay  time.Duration // wait this long, then start again (zero: at once)
	GiveUp bool          // do not start again: the limit was reached
}

func (p Policy) initial() time.Duration { return orDefault(p.Initial, DefaultInitial) }
func (p Policy) max() time.Duration     { return orDefault(p.Max, DefaultMax) }
func (p Policy) resetAfter() time.Duration {
	return orDefault(p.ResetAfter, DefaultResetAfter)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Next decides about a process that started at started and exited at exited.
// It returns the decision and the history to pass to the next call.
func (p Policy) Next(h History, started, exited time.Time) (Decision, History) {
	quick := h.quick + 1
	if exited.Sub(started) >= p.resetAfter() {
		quick = 1
	}
	next := History{quick: quick, restarts: p.window(h.restarts, exited)}
	if p.Limit.Count > 0 && len(next.restarts) >= p.Limit.Count {
		return Decision{GiveUp: true}, next
	}
	next.restarts = append(next.restarts, exited)
	return Decision{Delay: p.delay(quick)}, next
}

// MaxDelay is the cap on the delay between restarts.
func (p Policy) MaxDelay() time.Duration { return p.max() }

// delay is zero for the first quick failure, then Initial doubling up to Max.
func (p Policy) delay(quick int) time.Duration {
	if quick <= 1 {
		return 0
	}
	d := p.initial()
	for i := 2; i < quick; i++ {
		d *= 2
		if d >= p.max() {
			return p.max()
		}
	}
	return min(d, p.max())
}

// window keeps the restart times that still count toward the limit at now,
// in a new slice so that earlier histories stay unchanged.
func (p Policy) window(ts []time.Time, now time.Time) []time.Time {
	if p.Limit.Count <= 0 {
		return nil
	}
	kept := make([]time.Time, 0, len(ts)+1)
	for _, t := range ts {
		if p.Limit.Within <= 0 || now.Sub(t) < p.Limit.Within {
			kept = append(kept, t)
		}
	}
	return kept
}
