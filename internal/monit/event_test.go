package monit

import (
	"strings"
	"testing"
)

// TestEventState: monit's event machine (event.c) for one test, cycle by
// cycle: "f" a failed cycle, "o" a passed one; the want string has, per
// cycle, "-" (nothing), "a" (the failed action runs, the state unchanged),
// "A" (it runs and the state changed: alerted), "R" (the recovery runs).
func TestEventState(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail, ok Rate
		cycles   string
		want     string
	}{
		{"once: every failure acts, the first alerts", Rate{}, Rate{}, "fffoo", "AaaR-"},
		{"successes before the first failure are forgotten", Rate{}, Rate{}, "oofo", "--AR"},
		{"for 3 cycles", Rate{3, 3}, Rate{}, "ffffof", "--AaR-"},
		{"for 3 cycles, interrupted", Rate{3, 3}, Rate{}, "ffoff", "-----"},
		{"2 times within 3 cycles", Rate{2, 3}, Rate{}, "fofo", "--AR"},
		{"recovery after 2 cycles", Rate{}, Rate{2, 2}, "fooo", "A-R-"},
		{"a success cannot settle the first state", Rate{2, 2}, Rate{}, "foffo", "---AR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e eventState
			var got strings.Builder
			for _, c := range tc.cycles {
				failed := c == 'f'
				act, changed := e.post(failed, "msg", tc.fail, tc.ok)
				switch {
				case !act:
					got.WriteByte('-')
				case !failed:
					got.WriteByte('R')
				case changed:
					got.WriteByte('A')
				default:
					got.WriteByte('a')
				}
			}
			if got.String() != tc.want {
				t.Fatalf("cycles %s: got %s, want %s", tc.cycles, got.String(), tc.want)
			}
		})
	}
}

func TestEventText(t *testing.T) {
	for _, tc := range []struct {
		bit             int
		failed, changed bool
		want            string
	}{
		{EventNonexist, true, false, "Does not exist"},
		{EventChecksum, true, true, "Checksum changed"},
		{EventTimeout, false, false, "Timeout recovery"},
		{EventContent, true, true, "Content match"},
	} {
		if got := EventText(tc.bit, tc.failed, tc.changed); got != tc.want {
			t.Errorf("EventText(%#x, %v, %v) = %q, want %q", tc.bit, tc.failed, tc.changed, got, tc.want)
		}
	}
}
