package control

import (
	"context"
	"net/http"
	"time"
)

// The states of a drain.
const (
	DrainRunning = "draining"
	DrainDone    = "drained"
	DrainFailed  = "failed"
)

// DrainState is where the drain of a daemon's jobs stands.
type DrainState struct {
	State string    `json:"state"` // DrainRunning, DrainDone or DrainFailed
	By    string    `json:"by"`    // what began it: "request" (POST /v1/drain, a preStop hook) or "signal" (SIGTERM)
	Began time.Time `json:"began"`
	// Ended is when it finished; nil while it runs.
	Ended *time.Time `json:"ended,omitempty"`
	Error string     `json:"error,omitempty"` // why it failed
}

// Drainer runs the jobs' drain scripts at most once for the life of a
// daemon (vigil container: whatever asks first, a preStop hook or
// SIGTERM). The server serves it when given WithDrainer.
type Drainer interface {
	// Drain begins the drain unless it has begun, and blocks until it
	// has ended (or ctx is done: the drain goes on). The state's error
	// is the drain's; the returned error is the request's.
	Drain(ctx context.Context) (DrainState, error)
	// DrainState returns where the drain stands; nil before it began.
	DrainState() *DrainState
}

// WithDrainer has Serve answer POST /v1/drain with d, and show d's state
// in GET /v1/status (DaemonInfo.Drain). Without it the route answers
// ErrNotSupported: drains run through the daemon only in container mode.
func WithDrainer(d Drainer) ServeOption {
	return func(o *serveOptions) { o.drainer = d }
}

func drainHandler(d Drainer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if d == nil {
			writeError(w, http.StatusNotImplemented, "drains through the daemon are "+ErrNotSupported.Error()+" (only vigil container runs them)")
			return
		}
		st, err := d.Drain(r.Context())
		reply(w, st, err)
	}
}

// Drain asks the daemon to run the drains (once: a drain already run or
// running is waited for) and returns how it ended. The error matches
// ErrNotSupported when the daemon does not run drains itself (it is not
// vigil container), and ErrNoDaemon when none answers.
func (c *Client) Drain(ctx context.Context) (DrainState, error) {
	var st DrainState
	err := c.call(ctx, http.MethodPost, "/v1/drain", nil, &st)
	return st, err
}
