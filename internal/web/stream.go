package web

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// writeGrace bounds each write of an event stream: a client that stops
// reading is dropped after it.
const writeGrace = 30 * time.Second

// streamRetry is how long the page waits before it opens a stream again
// after one was refused for the cap on streams.
const streamRetry = 10 * time.Second

// sse writes one server-sent event stream. Its methods are called by the
// stream's handler alone.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	b  bytes.Buffer
}

// openStream takes one of the server's stream slots and starts an event
// stream on w; the caller must call the returned release when the stream
// ends. With every slot taken (MaxStreams streams open: a status page or
// log view each), it answers 503 with a Retry-After and returns false:
// the listener's other connections stay free for pages and actions.
func (s *Server) openStream(w http.ResponseWriter) (*sse, func(), bool) {
	select {
	case s.streams <- struct{}{}:
	default:
		s.log.Warn("web: live stream refused: every slot is taken", "max_streams", cap(s.streams))
		w.Header().Set("Retry-After", strconv.Itoa(int(streamRetry.Seconds())))
		http.Error(w, "too many live views are open: close some, or wait", http.StatusServiceUnavailable)
		return nil, nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w)}, func() {
		<-s.streams
		if s.streamEnded != nil {
			s.streamEnded()
		}
	}, true
}

// add appends one event (name, and data written as "data:" lines) to
// what the next flush sends.
func (e *sse) add(name, data string) {
	writeEvent(&e.b, name, data)
}

// retry sets the client's reconnection delay.
func (e *sse) retry(d time.Duration) {
	e.b.WriteString("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n")
}

// flush sends what was added, bounded by writeGrace; false when the
// client is gone or too slow.
func (e *sse) flush() bool {
	if e.b.Len() == 0 {
		return true
	}
	_ = e.rc.SetWriteDeadline(time.Now().Add(writeGrace))
	_, err := e.w.Write(e.b.Bytes())
	e.b.Reset()
	return err == nil && e.rc.Flush() == nil
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
