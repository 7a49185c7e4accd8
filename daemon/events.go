package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/job"
	"github.com/vigil-bosh/vigil/supervise"
)

// Sizes of the event stream: the recent events kept for new readers, and
// how far a reader may fall behind before it loses events.
const (
	eventRing        = 1024
	subscriberBuffer = 256
)

var _ control.EventSource = (*Daemon)(nil)

// Events implements control.EventSource: up to recent past events, then
// each new one as it happens, on a channel closed once ctx is done. The
// daemon never waits for a reader: one that falls subscriberBuffer events
// behind loses the events that do not fit, and once it has room again
// receives an EventLost saying how many (the stream goes on; Seq shows
// the gap). It works before Run, so a reader can see the first load.
func (d *Daemon) Events(ctx context.Context, recent int) (<-chan control.Event, error) {
	return d.events.subscribe(ctx, recent), nil
}

// eventHub turns the supervisors' status changes into events and fans them
// out. Its zero value is ready to use. publish is called on supervisors'
// goroutines and never blocks beyond its own short lock.
type eventHub struct {
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

// observe derives the events of st (a supervisor's new status) and sends
// them. It returns the status observed before st (zero at first sight).
func (h *eventHub) observe(st supervise.Status) (prev supervise.Status) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen == nil {
		h.seen = map[supervise.ID]tracked{}
	}
	prev = h.seen[st.ID].last
	t, evs := derive(h.seen[st.ID], st, now)
	h.seen[st.ID] = t
	for _, ev := range evs {
		h.sendLocked(ev)
	}
	return prev
}

// forget drops what observe keeps of id, whose supervisor has ended (a
// reload removed it), so that what the hub keeps does not grow with every
// name ever supervised.
func (h *eventHub) forget(id supervise.ID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.seen, id)
}

// publish sends an event that no status change carries (a configuration error).
func (h *eventHub) publish(ev control.Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sendLocked(ev)
}

func (h *eventHub) sendLocked(ev control.Event) {
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

// subscribe returns a channel of up to recent past events, then new ones,
// closed once ctx is done.
func (h *eventHub) subscribe(ctx context.Context, recent int) <-chan control.Event {
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

// configEvent is the event of a job whose configuration failed to load.
func configEvent(err error) control.Event {
	ev := control.Event{Kind: control.EventConfigError, Message: err.Error()}
	var le *job.LoadError
	if errors.As(err, &le) {
		ev.Job = le.Job
	}
	return ev
}
