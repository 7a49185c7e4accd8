package restart

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// run feeds a sequence of (uptime, gap) exits through the policy and returns
// the delays it chose, with -1 standing for "give up".
func run(p Policy, uptimes []time.Duration) []time.Duration {
	var h History
	var d Decision
	now := t0
	var out []time.Duration
	for _, up := range uptimes {
		started := now
		now = now.Add(up)
		d, h = p.Next(h, started, now)
		if d.GiveUp {
			out = append(out, -1)
			continue
		}
		out = append(out, d.Delay)
		now = now.Add(d.Delay)
	}
	return out
}

func TestNext(t *testing.T) {
	ms := time.Millisecond
	quick := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = ms
		}
		return s
	}
	tests := []struct {
		name    string
		policy  Policy
		uptimes []time.Duration
		want    []time.Duration
	}{
		{"first restart is immediate", Policy{}, quick(1), []time.Duration{0}},
		{"quick failures double", Policy{}, quick(5), []time.Duration{0, 100 * ms, 200 * ms, 400 * ms, 800 * ms}},
		{"capped at max", Policy{Initial: time.Second, Max: 3 * time.Second}, quick(5),
			[]time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}},
		{"cap reached far down the sequence", Policy{}, quick(14)[:14], nil},
		{"a long run resets", Policy{}, []time.Duration{ms, ms, ms, time.Minute, ms},
			[]time.Duration{0, 100 * ms, 200 * ms, 0, 100 * ms}},
		{"custom reset window", Policy{ResetAfter: time.Hour}, []time.Duration{ms, time.Minute},
			[]time.Duration{0, 100 * ms}},
		{"limit gives up", Policy{Limit: Limit{Count: 3, Within: time.Hour}}, quick(4),
			[]time.Duration{0, 100 * ms, 200 * ms, -1}},
		{"limit window slides", Policy{Limit: Limit{Count: 2, Within: 10 * time.Second}},
			[]time.Duration{ms, ms, 20 * time.Second, ms},
			[]time.Duration{0, 100 * ms, 0, 100 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(tt.policy, tt.uptimes)
			if tt.want == nil { // only check the cap
				if last := got[len(got)-1]; last != DefaultMax {
					t.Fatalf("last delay = %v, want %v (all: %v)", last, DefaultMax, got)
				}
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("delay %d = %v, want %v (all: %v)", i, got[i], tt.want[i], got)
				}
			}
		})
	}
}

func TestNextLeavesHistoryUnchanged(t *testing.T) {
	p := Policy{Limit: Limit{Count: 5, Within: time.Hour}}
	_, h1 := p.Next(History{}, t0, t0.Add(time.Millisecond))
	_, h2 := p.Next(h1, t0, t0.Add(2*time.Millisecond))
	_, h3 := p.Next(h1, t0, t0.Add(3*time.Millisecond))
	if len(h1.restarts) != 1 || len(h2.restarts) != 2 || len(h3.restarts) != 2 || !h2.restarts[1].Equal(t0.Add(2*time.Millisecond)) {
		t.Fatalf("histories share storage: %v %v %v", h1.restarts, h2.restarts, h3.restarts)
	}
}
