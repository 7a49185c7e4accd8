package container

import (
	"context"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// drainer runs a container's drains once for its whole life, whatever asks
// first: a POST /v1/drain (the preStop hook's vigil drain) or SIGTERM; a
// second request waits for the first's outcome. It implements
// control.Drainer. The drains run on a goroutine of their own, bounded by
// the budget from the moment they begin (the grace period counts from the
// preStop hook), so a caller that goes away does not cut them short.
type drainer struct {
	run    func(ctx context.Context) error // the drains
	budget time.Duration
	now    func() time.Time

	mu    sync.Mutex
	state *control.DrainState // nil until begun
	done  chan struct{}       // closed once the drains have ended
}

func newDrainer(run func(context.Context) error, budget time.Duration) *drainer {
	return &drainer{run: run, budget: budget, now: time.Now, done: make(chan struct{})}
}

// begin starts the drains, asked by by, unless they have begun; the
// channel is closed once they have ended.
func (d *drainer) begin(by string) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != nil {
		return d.done
	}
	d.state = &control.DrainState{State: control.DrainRunning, By: by, Began: d.now().UTC()}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d.budget)
		err := d.run(ctx)
		cancel()
		d.finish(err)
	}()
	return d.done
}

func (d *drainer) finish(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ended := d.now().UTC()
	d.state.Ended, d.state.State = &ended, control.DrainDone
	if err != nil {
		d.state.State, d.state.Error = control.DrainFailed, err.Error()
	}
	close(d.done)
}

// Drain implements control.Drainer: the drains, begun by a request unless
// they have begun, waited for.
func (d *drainer) Drain(ctx context.Context) (control.DrainState, error) {
	select {
	case <-d.begin("request"):
	case <-ctx.Done():
		return *d.DrainState(), ctx.Err()
	}
	return *d.DrainState(), nil
}

// DrainState implements control.Drainer.
func (d *drainer) DrainState() *control.DrainState {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == nil {
		return nil
	}
	st := *d.state
	return &st
}

// err is the drains' error once they have ended.
func (d *drainer) err() error {
	if st := d.DrainState(); st != nil && st.State == control.DrainFailed {
		return errorString(st.Error)
	}
	return nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// pod is the daemon as the pod sees it: its status shows where the drain
// stands, so that readiness ends once a drain has begun.
type pod struct {
	control.Manager
	drains *drainer
}

func (p pod) Status(ctx context.Context) (control.Status, error) {
	st, err := p.Manager.Status(ctx)
	st.Daemon.Drain = p.drains.DrainState()
	return st, err
}
