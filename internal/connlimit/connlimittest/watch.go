package connlimittest

import (
	"sync"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/connlimit"
)

// guard bounds a wait in Watch: a failure guard only, never a condition
// a test relies on.
const guard = 60 * time.Second

// Watch follows what the known peers of a bounded listener hold, for a
// test to wait on the listener's own state rather than on time.
type Watch struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each change
	held    map[uint32]int
	refused map[uint32]int
	// served[uid] lists, for each slot uid took, what every other peer
	// held at that moment.
	served map[uint32][]map[uint32]int
}

// NewWatch returns a Watch.
func NewWatch() *Watch {
	return &Watch{changed: make(chan struct{}), held: map[uint32]int{}, refused: map[uint32]int{},
		served: map[uint32][]map[uint32]int{}}
}

// Limits are connlimit's defaults, observed by w.
func (w *Watch) Limits() connlimit.Limits {
	l := connlimit.Defaults()
	l.Observe = w.observe
	return l
}

func (w *Watch) observe(p connlimit.Peer, held int, refused bool) {
	if !p.Known {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case refused:
		w.refused[p.UID]++
	case held > w.held[p.UID]:
		others := map[uint32]int{}
		for uid, n := range w.held {
			if uid != p.UID {
				others[uid] = n
			}
		}
		w.served[p.UID] = append(w.served[p.UID], others)
		fallthrough
	default:
		w.held[p.UID] = held
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// AwaitFull waits until uid holds every slot a peer has and has had at
// least refused connections refused.
func (w *Watch) AwaitFull(t testing.TB, uid uint32, refused int) {
	t.Helper()
	timeout := time.After(guard)
	for {
		w.mu.Lock()
		held, ref, changed := w.held[uid], w.refused[uid], w.changed
		w.mu.Unlock()
		if held == connlimit.PerPeer && ref >= refused {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("uid %d holds %d slots with %d refused after %s; want %d and %d", uid, held, ref, guard, connlimit.PerPeer, refused)
		}
	}
}

// HeldWhenServed returns, for each slot uid took, what other held then.
func (w *Watch) HeldWhenServed(uid, other uint32) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for _, others := range w.served[uid] {
		out = append(out, others[other])
	}
	return out
}

// Refused returns how many connections of uid were refused.
func (w *Watch) Refused(uid uint32) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused[uid]
}
