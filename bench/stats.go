package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// quantile returns the q-quantile (0..1) of xs by the nearest-rank method:
// the smallest sample with at least q of all samples at or below it. It
// returns NaN for no samples.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(q * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// median is the middle sample, or the mean of the two middle ones.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// seconds converts durations to float seconds.
func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// fmtSec renders a time in seconds with a unit that keeps three significant
// digits readable: µs, ms or s.
func fmtSec(s float64) string {
	switch {
	case math.IsNaN(s):
		return "n/a"
	case s < 0.001:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.1f ms", s*1e3)
	default:
		return fmt.Sprintf("%.2f s", s)
	}
}

// fmtKiB renders a size given in KiB.
func fmtKiB(k float64) string {
	switch {
	case math.IsNaN(k):
		return "n/a"
	case k >= 10*1024:
		return fmt.Sprintf("%.1f MiB", k/1024)
	default:
		return fmt.Sprintf("%.0f KiB", k)
	}
}

// fmtRatio renders a/b, or "—" when either is missing or b is zero.
func fmtRatio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "—"
	}
	r := a / b
	switch {
	case r >= 100:
		return fmt.Sprintf("×%.0f", r)
	case r >= 10:
		return fmt.Sprintf("×%.1f", r)
	case r < 0.1:
		return fmt.Sprintf("×%.3f", r)
	default:
		return fmt.Sprintf("×%.2f", r)
	}
}

// mean is the arithmetic mean, NaN for no samples.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}
