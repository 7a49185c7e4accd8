package history

import "math"

// point is one step of one process, 32 bytes: what the store keeps. A
// coarse point folds n fine ones.
type point struct {
	at       uint32  // unix seconds at the end of the step
	restarts uint32  // automatic restarts so far, at the end of the step
	rssKiB   uint32  // resident memory (the largest of a fold); unknown when none
	fds      uint32  // open descriptors (the largest of a fold); unknown when none
	cpu      float32 // cores used over the step (a fold's mean); NaN when unknown
	live     float32 // liveness probe latency in ms (a fold's largest); NaN when none
	ready    float32 // readiness probe latency in ms (a fold's largest); NaN when none
	up       uint8   // fine points that found the process running
	n        uint8   // fine points folded in (1 for a fine point)
	ncpu     uint8   // fine points folded in that knew cpu
}

// unknown marks a count the status did not have.
const unknown = math.MaxUint32

var nan32 = float32(math.NaN())

// ring is a bounded sequence of points, oldest first; pushing onto a full
// ring drops its oldest point. Its memory, max points, is allocated whole
// at the first push.
type ring struct {
	pts   []point
	start int // index of the oldest point once full
	max   int
}

func (r *ring) push(p point) {
	if r.pts == nil {
		r.pts = make([]point, 0, r.max)
	}
	if len(r.pts) < r.max {
		r.pts = append(r.pts, p)
		return
	}
	r.pts[r.start] = p
	r.start = (r.start + 1) % r.max
}

func (r *ring) len() int { return len(r.pts) }

// at is the i-th point, oldest first.
func (r *ring) at(i int) point { return r.pts[(r.start+i)%len(r.pts)] }

// fold adds fine point p into a coarse accumulator a.
func fold(a, p point) point {
	if a.n == 0 {
		return p
	}
	a.at, a.restarts = p.at, p.restarts
	a.rssKiB, a.fds = larger(a.rssKiB, p.rssKiB), larger(a.fds, p.fds)
	if !isNaN(p.cpu) { // a mean over the points that knew it
		if a.ncpu == 0 {
			a.cpu = 0
		}
		a.cpu = (a.cpu*float32(a.ncpu) + p.cpu) / float32(a.ncpu+1)
		a.ncpu++
	}
	a.live, a.ready = largest(a.live, p.live), largest(a.ready, p.ready)
	a.up += p.up
	a.n++
	return a
}

// larger is the larger of two counts, either of which may be unknown.
func larger(a, b uint32) uint32 {
	switch {
	case a == unknown:
		return b
	case b == unknown:
		return a
	}
	return max(a, b)
}

// largest is the larger of two values, either of which may be NaN.
func largest(a, b float32) float32 {
	switch {
	case isNaN(a):
		return b
	case isNaN(b):
		return a
	}
	return max(a, b)
}

func isNaN(f float32) bool { return f != f }
