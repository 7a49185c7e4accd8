package web

import (
	"bytes"
	"net/http"
	"strings"
	"time"
)

// writeGrace bounds each write of an event stream: a client that stops
// reading is dropped after it.
const writeGrace = 30 * time.Second

// events streams the status fragment as server-sent events ("status"
// events whose data is HTML): one at once, then one after each change of
// any process (a burst of changes coalesced, at most one per MinInterval),
// and one every Refresh for the usage figures. It returns when the client
// goes, a write fails, or the server closes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	refresh := time.NewTicker(s.cfg.Refresh)
	defer refresh.Stop()
	var samples map[string]cpuSample
	var last time.Time
	for first := true; ; first = false {
		// Taken before the status is read, so a change during the render
		// is never missed: it closes this channel and another render follows.
		changed := s.cfg.Backend.Changes()
		var frag bytes.Buffer
		var v statusView
		v, samples = s.status(r.Context(), samples)
		if err := s.tmpl.ExecuteTemplate(&frag, "status", v); err != nil {
			s.log.Error("web: render", "template", "status", "error", err)
			return
		}
		var ev bytes.Buffer
		if first {
			ev.WriteString("retry: 2000\n")
		}
		writeEvent(&ev, "status", frag.String())
		_ = rc.SetWriteDeadline(time.Now().Add(writeGrace))
		if _, err := w.Write(ev.Bytes()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		last = time.Now()
		select {
		case <-changed:
			if !s.pause(r, time.Until(last.Add(s.cfg.MinInterval))) {
				return
			}
		case <-refresh.C:
		case <-r.Context().Done():
			return
		case <-s.quit:
			return
		}
	}
}

// pause waits d (a rate limit, not a synchronisation), and reports false
// when the client went or the server closed meanwhile.
func (s *Server) pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.quit:
	}
	return false
}

// writeEvent appends one server-sent event. Every line of data gets its
// own "data:" field; a CR, which the protocol also takes for a line end,
// is written as an HTML character reference.
func writeEvent(b *bytes.Buffer, name, data string) {
	b.WriteString("event: " + name + "\n")
	data = strings.ReplaceAll(data, "\r", "&#13;")
	for line := range strings.SplitSeq(data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
}
