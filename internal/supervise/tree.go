package supervise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Tree owns a set of Supervisors: it is the only place that starts their
// goroutines, and it waits for each one it ends. Readers get an immutable
// view; Add and Remove are serialised.
type Tree struct {
	ctx  context.Context // parent of every supervisor's context
	mu   sync.Mutex      // serialises changes to the set
	view atomic.Pointer[[]*member]
}

type member struct {
	sup    *Supervisor
	cancel context.CancelFunc
}

// NewTree returns an empty tree whose supervisors live at most as long as ctx.
func NewTree(ctx context.Context) *Tree {
	t := &Tree{ctx: ctx}
	t.view.Store(&[]*member{})
	return t
}

// Add starts a supervisor for cfg (in state Stopped) and returns it.
func (t *Tree) Add(cfg Config) (*Supervisor, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := *t.view.Load()
	if _, ok := find(cur, cfg.ID); ok {
		return nil, fmt.Errorf("add %s: already supervised", cfg.ID)
	}
	ctx, cancel := context.WithCancel(t.ctx)
	s := New(cfg)
	go s.Run(ctx)
	next := append(slices.Clone(cur), &member{sup: s, cancel: cancel})
	slices.SortFunc(next, func(a, b *member) int { return compareID(a.sup.ID(), b.sup.ID()) })
	t.view.Store(&next)
	return s, nil
}

// Remove stops the process of id, waits until it is down (or ctx is done),
// then ends its supervisor. A process that could not be stopped before ctx
// ended is left running and reported in the error.
func (t *Tree) Remove(ctx context.Context, id ID) error { return t.RemoveAll(ctx, []ID{id}) }

// RemoveAll is Remove of every id at once: the processes stop in parallel.
// Ids not supervised are reported in the error; the others are removed.
func (t *Tree) RemoveAll(ctx context.Context, ids []ID) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := *t.view.Load()
	var errs []error
	var gone []*member
	for _, id := range ids {
		if i, ok := find(cur, id); ok {
			gone = append(gone, cur[i])
		} else {
			errs = append(errs, fmt.Errorf("remove %s: not supervised", id))
		}
	}
	for i, r := range stopAndEnd(ctx, gone) {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w (left %s)", gone[i].sup.ID(), r.err, r.st.State))
		}
	}
	next := slices.DeleteFunc(slices.Clone(cur), func(m *member) bool { return slices.Contains(gone, m) })
	t.view.Store(&next)
	return errors.Join(errs...)
}

// stopped is how one process's stop ended.
type stopped struct {
	st  Status
	err error
}

// stopAndEnd stops the process of each member in parallel, waits until
// each is down (or ctx is done), and ends its supervisor, waiting for it.
func stopAndEnd(ctx context.Context, ms []*member) []stopped {
	out := make([]stopped, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			out[i].st, out[i].err = m.sup.Do(ctx, VerbStop)
			m.cancel()
			<-m.sup.Done()
		})
	}
	wg.Wait()
	return out
}

// Get returns the supervisor of id.
func (t *Tree) Get(id ID) (*Supervisor, bool) {
	cur := *t.view.Load()
	if i, ok := find(cur, id); ok {
		return cur[i].sup, true
	}
	return nil, false
}

// List returns every supervisor, sorted by job then process.
func (t *Tree) List() []*Supervisor {
	cur := *t.view.Load()
	out := make([]*Supervisor, len(cur))
	for i, m := range cur {
		out[i] = m.sup
	}
	return out
}

// Shutdown stops every process in parallel, waits for all of them to be
// down (or ctx to be done), and ends every supervisor. It returns the first
// error met.
func (t *Tree) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := *t.view.Load()
	results := stopAndEnd(ctx, cur)
	t.view.Store(&[]*member{})
	for i, r := range results {
		if r.err != nil {
			return fmt.Errorf("stop %s: %w", cur[i].sup.ID(), r.err)
		}
	}
	return nil
}

func find(ms []*member, id ID) (int, bool) {
	return slices.BinarySearchFunc(ms, id, func(m *member, id ID) int { return compareID(m.sup.ID(), id) })
}

func compareID(a, b ID) int {
	return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Process, b.Process))
}

// Abandon ends every supervisor without stopping its process, and waits
// for them: the processes keep running, to be adopted by the next daemon.
func (t *Tree) Abandon() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range *t.view.Load() {
		m.cancel()
		<-m.sup.Done()
	}
	t.view.Store(&[]*member{})
}
