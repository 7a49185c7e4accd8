package monit

// Event bits of monit's status bitmask (event.h), each a kind of failure.
const (
	EventChecksum   = 0x1
	EventResource   = 0x2
	EventTimeout    = 0x4
	EventTimestamp  = 0x8
	EventSize       = 0x10
	EventConnection = 0x20
	EventPermission = 0x40
	EventUID        = 0x80
	EventGID        = 0x100
	EventNonexist   = 0x200
	EventInvalid    = 0x400
	EventData       = 0x800
	EventExec       = 0x1000
	EventFsflag     = 0x2000
	EventIcmp       = 0x4000
	EventContent    = 0x8000
	EventPID        = 0x40000
	EventPPID       = 0x80000
)

// eventTexts are monit's words for each event in its table's order
// (event.c), which is the order the summary picks the first failure in:
// failed, succeeded, changed.
var eventTexts = []struct {
	bit                       int
	failed, succeeded, change string
}{
	{EventChecksum, "Checksum failed", "Checksum succeeded", "Checksum changed"},
	{EventConnection, "Connection failed", "Connection succeeded", "Connection changed"},
	{EventContent, "Content failed", "Content succeeded", "Content match"},
	{EventData, "Data access error", "Data access succeeded", "Data access changed"},
	{EventExec, "Execution failed", "Execution succeeded", "Execution changed"},
	{EventFsflag, "Filesystem flags failed", "Filesystem flags succeeded", "Filesystem flags changed"},
	{EventGID, "GID failed", "GID succeeded", "GID changed"},
	{EventIcmp, "ICMP failed", "ICMP succeeded", "ICMP changed"},
	{EventInvalid, "Invalid type", "Type succeeded", "Type changed"},
	{EventNonexist, "Does not exist", "Exists", "Existence changed"},
	{EventPermission, "Permission failed", "Permission succeeded", "Permission changed"},
	{EventPID, "PID failed", "PID succeeded", "PID changed"},
	{EventPPID, "PPID failed", "PPID succeeded", "PPID changed"},
	{EventResource, "Resource limit matched", "Resource limit succeeded", "Resource limit changed"},
	{EventSize, "Size failed", "Size succeeded", "Size changed"},
	{EventTimeout, "Timeout", "Timeout recovery", "Timeout changed"},
	{EventTimestamp, "Timestamp failed", "Timestamp succeeded", "Timestamp changed"},
	{EventUID, "UID failed", "UID succeeded", "UID changed"},
}

// EventText is monit's name of an event: failed, succeeded, or (for a
// change test) changed.
func EventText(bit int, failed, changed bool) string {
	for _, e := range eventTexts {
		if e.bit != bit {
			continue
		}
		switch {
		case failed && changed:
			return e.change
		case failed:
			return e.failed
		}
		return e.succeeded
	}
	return "No Event"
}

// Rate is how many of the last cycles must agree before a test's state
// changes: monit's "N [M] cycles" (for N cycles, N times within M
// cycles). The zero value is once in one cycle.
type Rate struct{ Count, Cycles int }

func (r Rate) norm() Rate {
	if r.Count < 1 {
		r.Count = 1
	}
	if r.Cycles < r.Count {
		r.Cycles = r.Count
	}
	return r
}

// eventState is one test's history as monit keeps it (event.c): a bit for
// each cycle it was posted in (1: failed, latest in bit 0) and the state it
// has settled in. It is created by the first failure: successes before it
// are not even remembered.
type eventState struct {
	seen    bool
	state   eventPhase
	history uint64
	message string
}

type eventPhase int

const (
	phaseInit eventPhase = iota
	phaseFailed
	phaseSucceeded
)

// post records one cycle's result of a test whose failures need fail and
// whose recovery needs ok, and says whether its action runs now: the
// failed action (failed is true) each cycle a failure is seen once the test
// has failed, the recovery action once when the successes change its
// state; changed says the state changed (what monit mails). It is monit's
// Event_post, Event_check_state and handle_event.
func (e *eventState) post(failed bool, msg string, fail, ok Rate) (act, changed bool) {
	if !e.seen {
		if !failed {
			return false, false
		}
		*e = eventState{seen: true, state: phaseInit}
	} else {
		e.history <<= 1
	}
	if failed {
		e.history |= 1
	}
	e.message = msg
	want, r := phaseSucceeded, ok.norm()
	if failed {
		want, r = phaseFailed, fail.norm()
	}
	// A success cannot end the first state: only failures settle it.
	if failed || e.state != phaseInit {
		bit, n := uint64(0), 0
		if failed {
			bit = 1
		}
		for i := range r.Cycles {
			if (e.history>>i)&1 == bit {
				n++
			}
		}
		changed = n >= r.Count && want != e.state
	}
	if changed {
		e.state = want
		return true, true
	}
	// Unchanged: a failure is handled again each cycle it is seen.
	return e.state == phaseFailed && failed, false
}

// failing reports whether the test stands failed.
func (e *eventState) failing() bool { return e.seen && e.state == phaseFailed }
