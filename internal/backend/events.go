package backend

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// Sizes of the event stream: the recent events kept for new readers, and
// how far a reader may fall behind before it loses events.
const (
	eventRing        = 1024
	subscriberBuffer = 256
)

// Hub turns a back end's successive statuses into events and fans them
// out, for control.EventSource. Its zero value is ready to use. Observe and
// Publish may be called on any goroutine (a supervisor's, a watcher's) and
// never block beyond the hub's own short lock: a reader that falls behind
// loses events, never holds the back end.
type Hub struct {
	mu   sync.Mutex
	seq  uint64
	ring []control.Event // the latest events, oldest first: the last eventRing, and up to as many older
	seen map[supervise.ID]tracked
	subs map[*subscriber]struct{}
}

type subscriber struct {
	ch   chan control.Event
	lost int // events dropped since the last one delivered
}

// Observe derives the events of st, the new status of one process of
// instance inst (a number that grows with each new instance), and sends
// them. It keeps st, which the caller must leave as it is, and returns the
// status observed before it (nil at first sight), which nobody changes.
// Statuses of one process must be observed in the order they were taken.
func (h *Hub) Observe(st *control.ProcessStatus, inst int) (prev *control.ProcessStatus) {
	now := time.Now()
	id := supervise.ID{Job: st.Job, Process: st.Process}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[supervise.ID]tracked{}
	}
	t := h.seen[id]
	prev = t.last
	evs := derive(&t, st, inst, now)
	h.seen[id] = t
	for _, ev := range evs {
		h.sendLocked(ev)
	}
	return prev
}

// LastSeq is the sequence number of the latest event sent (0 before any):
// a reader that has seen it has seen every event sent so far.
func (h *Hub) LastSeq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// Forget drops what Observe keeps of id, which is no longer supervised, so
// that what the hub keeps does not grow with every name ever supervised.
func (h *Hub) Forget(id supervise.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.seen, id)
}

// Tracks reports whether the hub keeps anything of id.
func (h *Hub) Tracks(id supervise.ID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.seen[id]
	return ok
}

// Publish sends an event that no status carries (a configuration error).
func (h *Hub) Publish(ev control.Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sendLocked(ev)
}

// Asked publishes the EventAction of what (an action, "signal HUP",
// "reload") on job and process (either may be empty) when ctx names who
// asked (control.Requester); the daemon's own doings publish nothing.
func (h *Hub) Asked(ctx context.Context, job, process, what string) {
	who := control.Requester(ctx)
	if who == "" {
		return
	}
	h.Publish(control.Event{Job: job, Process: process, Kind: control.EventAction, Message: what + ", asked by " + who})
}

func (h *Hub) sendLocked(ev control.Event) {
	h.seq++
	ev.Seq = h.seq
	if len(h.ring) == 2*eventRing { // slide the window without reallocating each time
		h.ring = append(h.ring[:0], h.ring[eventRing:]...)
	}
	h.ring = append(h.ring, ev)
	for s := range h.subs {
		s.offer(ev)
	}
}

// offer delivers ev without blocking, first saying how many were lost.
func (s *subscriber) offer(ev control.Event) {
	if s.lost > 0 {
		marker := control.Event{Seq: ev.Seq, Time: ev.Time, Kind: control.EventLost, Lost: s.lost,
			Message: fmt.Sprintf("%d events lost: the reader fell behind", s.lost)}
		select {
		case s.ch <- marker:
			s.lost = 0
		default:
			s.lost++
			return
		}
	}
	select {
	case s.ch <- ev:
	default:
		s.lost++
	}
}

// Subscribe returns a channel of up to recent past events, then each new
// one, closed once ctx is done. A reader that falls subscriberBuffer events
// behind loses the events that do not fit and, once it has room again,
// receives an EventLost saying how many (Seq shows the gap).
func (h *Hub) Subscribe(ctx context.Context, recent int) <-chan control.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	past := h.ring[len(h.ring)-min(max(recent, 0), eventRing, len(h.ring)):]
	s := &subscriber{ch: make(chan control.Event, subscriberBuffer+len(past))}
	for _, ev := range past {
		s.ch <- ev
	}
	if h.subs == nil {
		h.subs = map[*subscriber]struct{}{}
	}
	h.subs[s] = struct{}{}
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, s)
		close(s.ch)
	})
	return s.ch
}
