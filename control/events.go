package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Event is one change of a supervised process (or of the configuration),
// as it happened.
type Event struct {
	Seq     uint64    `json:"seq"` // 1, 2, 3 ... per daemon; a gap means events were lost
	Time    time.Time `json:"time"`
	Job     string    `json:"job,omitempty"`
	Process string    `json:"process,omitempty"`
	Kind    string    `json:"kind"` // one of the Event* kinds
	PID     int       `json:"pid,omitempty"`
	// Exit is how the process ended, for EventExited and EventOOMKilled.
	Exit     *Exit `json:"exit,omitempty"`
	Restarts int   `json:"restarts"` // automatic restarts so far
	// DownSeconds, for EventRestarted, is the time from the exit to the
	// new instance running (backoff included), on the daemon's monotonic clock.
	DownSeconds float64 `json:"down_seconds,omitempty"`
	// Lost, for EventLost, is how many events the reader missed.
	Lost    int    `json:"lost,omitempty"`
	Message string `json:"message,omitempty"`
}

// The kinds of Event.
const (
	EventStarted        = "started"         // an instance runs (first start, or by request)
	EventRestarted      = "restarted"       // an automatic restart runs
	EventExited         = "exited"          // the process ended (Exit says how)
	EventOOMKilled      = "oom-killed"      // the kernel's OOM killer ended it
	EventBackoff        = "backoff"         // a restart waits for its delay
	EventStopping       = "stopping"        // the stop ladder has begun
	EventEscalated      = "escalated"       // the stop went on to SIGQUIT or SIGKILL (Message says which, and after how long)
	EventStopped        = "stopped"         // down, as asked
	EventGaveUp         = "gave-up"         // failed: no restart will follow
	EventProbeFailed    = "probe-failed"    // a probe failed after passing (Message names it)
	EventProbeRecovered = "probe-recovered" // a probe passed after failing
	EventHealthy        = "healthy"         // health turned healthy while running
	EventUnhealthy      = "unhealthy"       // health turned unhealthy while running
	EventReady          = "ready"           // turned ready while running
	EventNotReady       = "not-ready"       // turned not ready while running
	EventUnmonitored    = "unmonitored"     // left alone: an exit is not restarted
	EventMonitored      = "monitored"       // supervised again
	EventConfigError    = "config-error"    // a job's configuration failed to load
	EventAction         = "action"          // an operator asked for an action, a signal or a reload (Message says which, and who)
	EventDrained        = "drained"         // a job's drain script finished (vigil container; Message: its answer, exit and time)
	EventDrainFailed    = "drain-failed"    // a job's drain script failed (vigil container; Message: why, its output and exit)
	EventLost           = "lost"            // the reader fell behind: Lost events were dropped
)

// EventSource is a Manager that also streams events. Back ends without
// events (systemd) do not implement it; the server then answers
// ErrNotSupported.
type EventSource interface {
	// Events sends up to recent past events, then each new one as it
	// happens, on a channel closed once ctx is done (or the source ends).
	// It never blocks the source: a reader that falls behind receives an
	// EventLost saying how many it missed.
	Events(ctx context.Context, recent int) (<-chan Event, error)
}

// EventSeq is an EventSource that numbers its events: the server puts the
// latest number in an action's reply (ActionReply.Seq), so that a client
// following the events knows when it has seen all that led to the reply.
type EventSeq interface {
	LastSeq() uint64
}

// ErrNotSupported is returned for a request the back end cannot serve.
var ErrNotSupported = errors.New("not supported by this back end")

// maxRecent bounds the past events a request may ask for.
const maxRecent = 1 << 16

// eventsHandler streams m's events as NDJSON, one flushed line each, until
// the client goes away or streams is done (the server shutting down).
func eventsHandler(m Manager, streams context.Context) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		src, ok := m.(EventSource)
		if !ok {
			writeError(w, http.StatusNotImplemented, "events are "+ErrNotSupported.Error())
			return
		}
		recent := 0
		if q := r.URL.Query().Get("recent"); q != "" {
			n, err := strconv.Atoi(q)
			if err != nil || n < 0 || n > maxRecent {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("recent: want 0 to %d, got %q", maxRecent, q))
				return
			}
			recent = n
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(streams, cancel)()
		events, err := src.Events(ctx, recent)
		if err != nil {
			reply(w, struct{}{}, err)
			return
		}
		rc := http.NewResponseController(w)
		// A reader that stopped reading must not hold the server's shutdown:
		// once the stream is to end, a write blocked on it fails at once.
		defer context.AfterFunc(ctx, func() { rc.SetWriteDeadline(time.Now()) })()
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		if rc.Flush() != nil {
			return
		}
		enc := json.NewEncoder(w)
		for ev := range events {
			if enc.Encode(ev) != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// Events implements EventSource over the socket. The channel is closed when
// ctx is done or the daemon ends the stream (it went away): a caller tells
// the two apart with ctx.Err(). The caller reads until the channel closes
// or cancels ctx. The error is ErrNoDaemon when none answers, and
// ErrNotSupported from a back end without events.
func (c *Client) Events(ctx context.Context, recent int) (<-chan Event, error) {
	path := "/v1/events"
	if recent > 0 {
		path += "?recent=" + strconv.Itoa(recent)
	}
	resp, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readError(resp, nil)
	}
	ch := make(chan Event)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev Event
			if dec.Decode(&ev) != nil {
				return
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, nil
}
