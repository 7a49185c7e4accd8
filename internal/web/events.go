package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// timelineRecent is how many past events a page's stream starts with.
const timelineRecent = 200

// events is the status page's one stream, so that a page holds one
// connection: "status" events (the status fragment's HTML) at once, after
// each change of any process (a burst coalesced, at most one per
// MinInterval) and every Refresh for the usage figures; "event" events
// (a timeline entry's HTML), the recent ones first, then each as the back
// end publishes it; and "samples" (JSON: the newest history point of
// every process) each time the history records. It returns when the
// client goes, a write fails, or the server closes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var timeline <-chan control.Event
	if evs, err := s.cfg.Backend.Events(ctx, timelineRecent); err == nil {
		timeline = evs
	} else {
		s.log.Debug("web: no events for the timeline", "error", err)
	}
	e, release, ok := s.openStream(w)
	if !ok {
		return
	}
	defer release()
	refresh := time.NewTicker(s.cfg.Refresh)
	defer refresh.Stop()
	e.retry(2 * time.Second)
	var samples map[string]cpuSample
	stopping := map[string]bool{} // processes whose stop is under way: their exit is the stop's
	var sampled <-chan struct{}
	if s.cfg.History != nil {
		sampled = s.cfg.History.Changes()
	}
	next := time.Time{} // the earliest the next status may go
	var pending <-chan time.Time
	changed := s.cfg.Backend.Changes()
	sendStatus := func() bool {
		// Taken before the status is read, so a change during the render
		// is never missed: it closes this channel and another render follows.
		changed = s.cfg.Backend.Changes()
		var v statusView
		v, samples = s.status(ctx, samples)
		var frag bytes.Buffer
		if err := s.tmpl.ExecuteTemplate(&frag, "status", v); err != nil {
			s.log.Error("web: render", "template", "status", "error", err)
			return false
		}
		e.add("status", frag.String())
		next = time.Now().Add(s.cfg.MinInterval)
		return e.flush()
	}
	if !sendStatus() {
		return
	}
	for {
		select {
		case <-changed:
			changed = nil // until the status is sent again
			if d := time.Until(next); d > 0 {
				pending = time.After(d) // a rate limit, not a synchronisation
				continue
			}
			if !sendStatus() {
				return
			}
		case <-pending:
			pending = nil
			if !sendStatus() {
				return
			}
		case <-refresh.C:
			if pending == nil && !sendStatus() {
				return
			}
		case ev, open := <-timeline:
			if !open {
				timeline = nil
				continue
			}
			if !s.sendEvent(e, ev, stopping) {
				return
			}
		case <-sampled:
			sampled = s.cfg.History.Changes()
			if !s.sendSamples(e) {
				return
			}
		case <-ctx.Done():
			return
		case <-s.quit:
			return
		}
	}
}

// sendEvent sends ev as a timeline entry. stopping is the processes whose
// stop the stream has seen begin and not end: the exit that ends a stop is
// an operator's doing, not a problem.
func (s *Server) sendEvent(e *sse, ev control.Event, stopping map[string]bool) bool {
	id := ev.Job + "/" + ev.Process
	v := eventViewOf(ev, time.Now())
	switch ev.Kind {
	case control.EventStopping:
		stopping[id] = true
	case control.EventExited:
		if stopping[id] {
			v.Class = "operator"
		}
	case control.EventStopped, control.EventStarted, control.EventRestarted, control.EventGaveUp:
		delete(stopping, id)
	}
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, "event", v); err != nil {
		s.log.Error("web: render", "template", "event", "error", err)
		return false
	}
	e.add("event", b.String())
	return e.flush()
}

// sendSamples sends the newest history point of every process.
func (s *Server) sendSamples(e *sse) bool {
	b, err := json.Marshal(historyReply{Step: s.cfg.History.Step().Seconds(),
		Series: s.cfg.History.Query(s.cfg.History.Step(), "", "")})
	if err != nil {
		s.log.Error("web: samples", "error", err)
		return false
	}
	e.add("samples", string(b))
	return e.flush()
}
