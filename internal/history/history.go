// Package history keeps a bounded, in-memory history of every supervised
// process: CPU, resident memory, open descriptors, restarts and probe
// latencies, one point a step (10 s) for the last hour and one a fold of
// steps (a minute) for the last six, in fixed rings per process. It is fed
// from the daemon's status, whose resource figures come from the shared
// pass over /proc (one for every process, shared with the other statuses
// of the same second), never from a scan of its own. Both back ends feed
// it the same way.
//
// Wiring: s := New(Config{}); run s.Run(ctx, daemon) in a goroutine;
// read with Query, wait for new points with Changes.
package history

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend"
)

// StatusSource is what the points are read from at each step.
type StatusSource interface {
	Status(ctx context.Context) (control.Status, error)
}

// Config sizes a Store. Zero values pick the defaults noted.
type Config struct {
	Step time.Duration // between two fine points; default 10 s (whole seconds)
	Fine int           // fine points kept per process; default 360 (an hour of 10 s)
	Fold int           // fine steps per coarse point; default 6 (a minute)
	// Coarse is the coarse points kept per process; default 360 (six
	// hours of a minute).
	Coarse int
}

func (c Config) withDefaults() Config {
	if c.Step <= 0 {
		c.Step = 10 * time.Second
	}
	c.Step = max(c.Step.Truncate(time.Second), time.Second)
	if c.Fine <= 0 {
		c.Fine = 360
	}
	if c.Fold <= 0 {
		c.Fold = 6
	}
	c.Fold = min(c.Fold, math.MaxUint8)
	if c.Coarse <= 0 {
		c.Coarse = 360
	}
	return c
}

// Store is the history of every process supervised. Its methods are safe
// for concurrent use; none blocks beyond the store's own short lock.
type Store struct {
	cfg     Config
	changes backend.Notifier

	mu    sync.Mutex
	procs map[key]*series
	last  time.Time // when the latest points were recorded
}

type key struct{ job, process string }

// series is one process's history, and what its next point is computed
// from.
type series struct {
	fine, coarse ring
	acc          point // the coarse point being folded (acc.n fine points so far)
	cpu          float64
	pid          int // the instance cpu was read from
	cpuAt        time.Time
}

// New returns an empty store sized by cfg.
func New(cfg Config) *Store {
	return &Store{cfg: cfg.withDefaults(), procs: map[key]*series{}}
}

// Step is the time between two fine points.
func (s *Store) Step() time.Duration { return s.cfg.Step }

// Changes returns a channel closed at the next Record. Call it again
// after each close.
func (s *Store) Changes() <-chan struct{} { return s.changes.Wait() }

// Run records a point of every process of src's status at once and then
// every Step, until ctx is done. A status that cannot be read is skipped.
func (s *Store) Run(ctx context.Context, src StatusSource) {
	tick := time.NewTicker(s.cfg.Step)
	defer tick.Stop()
	for {
		if st, err := src.Status(ctx); err == nil {
			s.Record(st, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Record adds one point per process of st, taken at at, and forgets the
// processes st no longer has (a reload removed them).
func (s *Store) Record(st control.Status, at time.Time) {
	s.mu.Lock()
	seen := make(map[key]bool, len(st.Processes))
	for _, ps := range st.Processes {
		k := key{ps.Job, ps.Process}
		seen[k] = true
		sr := s.procs[k]
		if sr == nil {
			sr = &series{fine: ring{max: s.cfg.Fine}, coarse: ring{max: s.cfg.Coarse}}
			s.procs[k] = sr
		}
		s.add(sr, s.pointOf(sr, ps, at))
	}
	for k := range s.procs {
		if !seen[k] {
			delete(s.procs, k)
		}
	}
	s.last = at
	s.mu.Unlock()
	s.changes.Notify()
}

// add pushes p onto the fine ring and folds it into the coarse point of
// its fold of steps, which goes onto the coarse ring once a later fold
// begins (folds are aligned on the clock, so every process's coarse
// points fall at the same times).
func (s *Store) add(sr *series, p point) {
	sr.fine.push(p)
	span := uint32(s.cfg.Step.Seconds()) * uint32(s.cfg.Fold)
	if sr.acc.n > 0 && (p.at-1)/span != (sr.acc.at-1)/span {
		sr.coarse.push(sr.acc)
		sr.acc = point{}
	}
	sr.acc = fold(sr.acc, p)
}

// pointOf is the point of ps at at; CPU is the rate since the previous
// point of the same instance, or since the instance started.
func (s *Store) pointOf(sr *series, ps control.ProcessStatus, at time.Time) point {
	p := point{at: uint32(max(at.Unix(), 0)), restarts: uint32(max(ps.Restarts, 0)), rssKiB: unknown, fds: unknown,
		cpu: nan32, live: nan32, ready: nan32, n: 1}
	if ps.State == "running" {
		p.up = 1
	}
	for _, r := range ps.Probes {
		switch r.Role {
		case "liveness":
			p.live = float32(r.LatencyMS)
		case "readiness":
			p.ready = float32(r.LatencyMS)
		}
	}
	u := ps.Usage
	if u == nil {
		sr.pid = 0
		return p
	}
	p.rssKiB = uint32(min(u.RSSBytes/1024, unknown-1))
	p.fds = uint32(min(u.OpenFDs, unknown-1))
	pid := ps.ExecPID
	if pid == 0 {
		pid = ps.PID
	}
	switch {
	case pid == sr.pid && at.After(sr.cpuAt) && u.CPUSeconds >= sr.cpu:
		p.cpu = float32((u.CPUSeconds - sr.cpu) / at.Sub(sr.cpuAt).Seconds())
	case pid != sr.pid && !ps.Since.IsZero() && at.After(ps.Since):
		p.cpu = float32(u.CPUSeconds / at.Sub(ps.Since).Seconds())
	}
	if !isNaN(p.cpu) {
		p.ncpu = 1
	}
	sr.cpu, sr.pid, sr.cpuAt = u.CPUSeconds, pid, at
	return p
}
