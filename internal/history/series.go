package history

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"
)

// Series is one process's points over a span, as columns of equal length
// (the JSON the status page draws from). Values a point does not have are
// NaN (null in JSON): CPU before a second point of the same instance,
// memory and descriptors while nothing runs, a latency without its probe.
type Series struct {
	Job     string `json:"job"`
	Process string `json:"process"`
	// Step is the seconds each point covers: the store's step, or a fold
	// of steps for a span longer than the fine points keep.
	Step float64 `json:"step_seconds"`
	T    []int64 `json:"t"` // unix seconds at the end of each point
	// Up is the share of the point's steps the process was running (0 or
	// 1 for a fine point).
	Up         Values `json:"up"`
	CPU        Values `json:"cpu_cores"`
	RSS        Values `json:"rss_bytes"`
	FDs        Values `json:"open_fds"`
	Restarts   []int  `json:"restarts"` // automatic restarts so far: a rise is a restart
	LivenessMS Values `json:"liveness_ms"`
	ReadyMS    Values `json:"readiness_ms"`
}

// Values are numbers with NaN for none, written to JSON with six
// significant digits and null for NaN.
type Values []float64

// MarshalJSON writes v as a JSON array.
func (v Values) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+8*len(v))
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, f, 'g', 6, 64)
	}
	return append(b, ']'), nil
}

// Query returns the series of every process (or only those of job, and
// of process within it, when given) over the span that ends at the latest
// recording: the fine points when span fits in them, else the coarse ones
// (with the fold in progress as the last). Series come sorted by job and
// process.
func (s *Store) Query(span time.Duration, job, process string) []Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := uint32(max(s.last.Add(-span).Unix(), 0))
	coarse := span > time.Duration(s.cfg.Fine)*s.cfg.Step
	out := []Series{}
	for k, sr := range s.procs {
		if (job != "" && k.job != job) || (process != "" && k.process != process) {
			continue
		}
		se := Series{Job: k.job, Process: k.process, Step: s.cfg.Step.Seconds()}
		if coarse {
			se.Step *= float64(s.cfg.Fold)
			appendRing(&se, &sr.coarse, from)
			if sr.acc.n > 0 && sr.acc.at > from {
				appendPoint(&se, sr.acc)
			}
		} else {
			appendRing(&se, &sr.fine, from)
		}
		out = append(out, se)
	}
	sortSeries(out)
	return out
}

// appendRing appends the points of r later than from.
func appendRing(se *Series, r *ring, from uint32) {
	for i := range r.len() {
		if p := r.at(i); p.at > from {
			appendPoint(se, p)
		}
	}
}

func appendPoint(se *Series, p point) {
	count := func(c uint32) float64 {
		if c == unknown {
			return math.NaN()
		}
		return float64(c)
	}
	se.T = append(se.T, int64(p.at))
	se.Up = append(se.Up, float64(p.up)/float64(max(p.n, 1)))
	se.CPU = append(se.CPU, float64(p.cpu))
	se.RSS = append(se.RSS, count(p.rssKiB)*1024)
	se.FDs = append(se.FDs, count(p.fds))
	se.Restarts = append(se.Restarts, int(p.restarts))
	se.LivenessMS = append(se.LivenessMS, float64(p.live))
	se.ReadyMS = append(se.ReadyMS, float64(p.ready))
}

func sortSeries(ss []Series) {
	slices.SortFunc(ss, func(a, b Series) int {
		return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Process, b.Process))
	})
}
