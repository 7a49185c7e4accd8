package metrics

import (
	"sort"

	"github.com/vigil-bosh/vigil/internal/promtext"
)

// restartBounds are the restart latency's buckets, in seconds: from an
// immediate restart (milliseconds) to the longest backoff (a minute) and
// beyond.
func restartBounds() []float64 {
	return []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
}

// requestBounds are the control requests' buckets, in seconds: from a
// status query (under a millisecond) to an action waiting out a stop
// ladder (about 20 s).
func requestBounds() []float64 {
	return []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
}

// histogram counts observations into buckets. Its owner guards it.
type histogram struct {
	bounds []float64 // increasing, the +Inf bucket implied
	counts []uint64  // per bucket, not cumulative; one more than bounds
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// observe counts v in the first bucket whose bound is at least v.
func (h *histogram) observe(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)]++
	h.sum += v
	h.count++
}

// value is h in the text format's terms: cumulative buckets.
func (h *histogram) value() promtext.HistogramValue {
	v := promtext.HistogramValue{Buckets: make([]promtext.Bucket, len(h.bounds)), Sum: h.sum, Count: h.count}
	var below uint64
	for i, b := range h.bounds {
		below += h.counts[i]
		v.Buckets[i] = promtext.Bucket{UpperBound: b, Count: below}
	}
	return v
}
