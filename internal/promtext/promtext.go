// Package promtext writes Prometheus' text exposition format, version
// 0.0.4: counters, gauges, histograms and summaries, each family with its
// HELP and TYPE lines, label values and help texts escaped. It is the
// whole of what vigil needs from a metrics library, and initialises
// nothing when a program starts.
//
// A Set collects the families of one exposition; WriteTo writes them by
// name, each family's series ordered by their labels, so that the same
// figures always give the same text. A Set is used by one goroutine.
package promtext

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ContentType is the media type of what WriteTo writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Type is a family's metric type.
type Type int

const (
	Counter Type = iota
	Gauge
	Histogram
	Summary
	Untyped
)

func (t Type) String() string {
	return [...]string{"counter", "gauge", "histogram", "summary", "untyped"}[t]
}

// Bucket is one bucket of a histogram: the observations up to and
// including UpperBound, counted cumulatively.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// HistogramValue is one histogram series. The writer adds the +Inf
// bucket (Count) itself; Buckets' bounds must increase and be finite.
type HistogramValue struct {
	Buckets []Bucket
	Sum     float64
	Count   uint64
}

// Quantile is one quantile of a summary: the φ-quantile Quantile (0 to 1)
// is Value.
type Quantile struct {
	Quantile, Value float64
}

// SummaryValue is one summary series.
type SummaryValue struct {
	Quantiles []Quantile
	Sum       float64
	Count     uint64
}

// Set is the families of one exposition, one per name. The zero Set is
// empty and ready to use.
type Set struct {
	fams map[string]*Family
	err  error // the first misuse, returned by WriteTo
}

// Family is the series of one metric name. Its Add methods record a
// misuse (a series of another type, bad labels) on the Set it came from.
type Family struct {
	set        *Set
	name, help string
	typ        Type
	series     []series
}

// series is one sample (counter, gauge, untyped) or one histogram or
// summary, by its labels.
type series struct {
	labels []label // sorted by name
	value  float64
	hist   *HistogramValue
	sum    *SummaryValue
}

type label struct{ name, value string }

// Counter returns the counter family name, made on first use with help.
func (s *Set) Counter(name, help string) *Family { return s.family(name, help, Counter) }

// Gauge returns the gauge family name, made on first use with help.
func (s *Set) Gauge(name, help string) *Family { return s.family(name, help, Gauge) }

// Histogram returns the histogram family name, made on first use with help.
func (s *Set) Histogram(name, help string) *Family { return s.family(name, help, Histogram) }

// Summary returns the summary family name, made on first use with help.
func (s *Set) Summary(name, help string) *Family { return s.family(name, help, Summary) }

// Untyped returns the untyped family name, made on first use with help.
func (s *Set) Untyped(name, help string) *Family { return s.family(name, help, Untyped) }

func (s *Set) family(name, help string, t Type) *Family {
	if f := s.fams[name]; f != nil {
		if f.typ != t || f.help != help {
			s.fail(fmt.Errorf("promtext: %s asked for as a %s with help %q, but it is a %s with help %q", name, t, help, f.typ, f.help))
		}
		return f
	}
	if !validMetricName(name) {
		s.fail(fmt.Errorf("promtext: invalid metric name %q", name))
	}
	if s.fams == nil {
		s.fams = map[string]*Family{}
	}
	f := &Family{set: s, name: name, help: help, typ: t}
	s.fams[name] = f
	return f
}

func (s *Set) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// Add adds a counter, gauge or untyped sample of value v; labels are
// name, value pairs.
func (f *Family) Add(v float64, labels ...string) {
	if f.typ == Histogram || f.typ == Summary {
		f.set.fail(fmt.Errorf("promtext: a plain sample added to %s %s", f.typ, f.name))
		return
	}
	f.add(series{value: v}, labels)
}

// AddHistogram adds one histogram series; labels are name, value pairs.
func (f *Family) AddHistogram(h HistogramValue, labels ...string) {
	if f.typ != Histogram {
		f.set.fail(fmt.Errorf("promtext: a histogram added to %s %s", f.typ, f.name))
		return
	}
	for i, b := range h.Buckets {
		if math.IsNaN(b.UpperBound) || math.IsInf(b.UpperBound, 0) || i > 0 && b.UpperBound <= h.Buckets[i-1].UpperBound {
			f.set.fail(fmt.Errorf("promtext: %s: bucket bounds must be finite and increase: %v", f.name, h.Buckets))
			return
		}
	}
	f.add(series{hist: &h}, labels)
}

// AddSummary adds one summary series; labels are name, value pairs.
func (f *Family) AddSummary(s SummaryValue, labels ...string) {
	if f.typ != Summary {
		f.set.fail(fmt.Errorf("promtext: a summary added to %s %s", f.typ, f.name))
		return
	}
	f.add(series{sum: &s}, labels)
}

func (f *Family) add(s series, pairs []string) {
	if len(pairs)%2 != 0 {
		f.set.fail(fmt.Errorf("promtext: %s: labels %q are not name, value pairs", f.name, pairs))
		return
	}
	s.labels = make([]label, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		name := pairs[i]
		if !validLabelName(name) || f.typ == Histogram && name == "le" || f.typ == Summary && name == "quantile" {
			f.set.fail(fmt.Errorf("promtext: %s: invalid label name %q", f.name, name))
			return
		}
		s.labels = append(s.labels, label{name, strings.ToValidUTF8(pairs[i+1], "\uFFFD")})
	}
	slices.SortFunc(s.labels, func(a, b label) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(s.labels); i++ {
		if s.labels[i].name == s.labels[i-1].name {
			f.set.fail(fmt.Errorf("promtext: %s: label %q given twice", f.name, s.labels[i].name))
			return
		}
	}
	f.series = append(f.series, s)
}

// compareLabels orders series by their labels: by each label's name, then
// its value, in name order; fewer labels first on a tie.
func compareLabels(a, b series) int {
	for i := range min(len(a.labels), len(b.labels)) {
		if c := strings.Compare(a.labels[i].name, b.labels[i].name); c != 0 {
			return c
		}
		if c := strings.Compare(a.labels[i].value, b.labels[i].value); c != 0 {
			return c
		}
	}
	return len(a.labels) - len(b.labels)
}

// WriteTo writes every family that has a series, by name, and returns
// the bytes written and the first write error. It writes nothing and
// returns an error when the Set was misused (the first misuse), when a family has two series with the same labels, or when a
// family's name is another's histogram or summary series name (NAME_sum,
// NAME_count, NAME_bucket), since a reader could not tell them apart.
// WriteTo sorts the families' series in place.
func (s *Set) WriteTo(w io.Writer) (int64, error) {
	names, err := s.check()
	if err != nil {
		return 0, err
	}
	return s.write(w, names)
}

// check returns the names of the families to write, in order, after it
// sorted their series, or the Set's first misuse.
func (s *Set) check() ([]string, error) {
	if s.err != nil {
		return nil, s.err
	}
	names := make([]string, 0, len(s.fams))
	for name, f := range s.fams {
		if len(f.series) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		f := s.fams[name]
		if f.typ == Histogram || f.typ == Summary {
			for _, suffix := range []string{"_sum", "_count", "_bucket"} {
				if o := s.fams[name+suffix]; o != nil && len(o.series) > 0 {
					return nil, fmt.Errorf("promtext: %s is a series name of %s %s", name+suffix, f.typ, name)
				}
			}
		}
		slices.SortFunc(f.series, compareLabels)
		for i := 1; i < len(f.series); i++ {
			if compareLabels(f.series[i-1], f.series[i]) == 0 {
				return nil, fmt.Errorf("promtext: %s has two series labelled %s", name, appendLabels(nil, f.series[i].labels, "", ""))
			}
		}
	}
	return names, nil
}

// write writes the families names to w in pieces of about 32 KiB.
func (s *Set) write(w io.Writer, names []string) (int64, error) {
	var total int64
	b := make([]byte, 0, 40<<10)
	flush := func() error {
		n, err := w.Write(b)
		total += int64(n)
		if err == nil && n < len(b) {
			err = io.ErrShortWrite
		}
		b = b[:0]
		if err != nil {
			return fmt.Errorf("promtext: write: %w", err)
		}
		return nil
	}
	for _, name := range names {
		f := s.fams[name]
		b = f.appendHeader(b)
		for i := range f.series {
			if b = f.appendSeries(b, &f.series[i]); len(b) >= 32<<10 {
				if err := flush(); err != nil {
					return total, err
				}
			}
		}
	}
	return total, flush()
}

// appendHeader appends f's HELP and TYPE lines.
func (f *Family) appendHeader(b []byte) []byte {
	b = append(b, "# HELP "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = appendEscaped(b, helpText(f.help), false)
	b = append(b, "\n# TYPE "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = append(b, f.typ.String()...)
	return append(b, '\n')
}

// appendSeries appends the lines of one of f's series.
func (f *Family) appendSeries(b []byte, s *series) []byte {
	switch f.typ {
	case Histogram:
		for _, bk := range s.hist.Buckets {
			b = appendSample(b, f.name, "_bucket", s.labels, "le", formatFloat(bk.UpperBound), float64(bk.Count))
		}
		b = appendSample(b, f.name, "_bucket", s.labels, "le", "+Inf", float64(s.hist.Count))
		b = appendSample(b, f.name, "_sum", s.labels, "", "", s.hist.Sum)
		return appendSample(b, f.name, "_count", s.labels, "", "", float64(s.hist.Count))
	case Summary:
		for _, q := range s.sum.Quantiles {
			b = appendSample(b, f.name, "", s.labels, "quantile", formatFloat(q.Quantile), q.Value)
		}
		b = appendSample(b, f.name, "_sum", s.labels, "", "", s.sum.Sum)
		return appendSample(b, f.name, "_count", s.labels, "", "", float64(s.sum.Count))
	}
	return appendSample(b, f.name, "", s.labels, "", "", s.value)
}

// appendSample appends one line: name and suffix, the labels (and the
// label extra with value extraValue last, when extra is not ""), the value.
func appendSample(b []byte, name, suffix string, labels []label, extra, extraValue string, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	b = appendLabels(b, labels, extra, extraValue)
	b = append(b, ' ')
	b = appendFloat(b, v)
	return append(b, '\n')
}

func appendLabels(b []byte, labels []label, extra, extraValue string) []byte {
	if len(labels) == 0 && extra == "" {
		return b
	}
	b = append(b, '{')
	for i, l := range labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLabel(b, l.name, l.value)
	}
	if extra != "" {
		if len(labels) > 0 {
			b = append(b, ',')
		}
		b = appendLabel(b, extra, extraValue)
	}
	return append(b, '}')
}

func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, `="`...)
	b = appendEscaped(b, value, true)
	return append(b, '"')
}

// helpText is help as a reader of the format gets it back: valid UTF-8
// (U+FFFD for invalid bytes), without the blanks at its start that a
// reader skips.
func helpText(help string) string {
	return strings.TrimLeft(strings.ToValidUTF8(help, "\uFFFD"), " \t")
}

// appendEscaped appends s with backslash and newline escaped as the text
// format wants in help texts, and the double quote too in label values.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat appends v as the text format writes values: the shortest
// decimal that reads back as v, and +Inf, -Inf, NaN.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// formatFloat is appendFloat's text, for the le and quantile labels.
func formatFloat(v float64) string { return string(appendFloat(nil, v)) }

// validMetricName: [a-zA-Z_:][a-zA-Z0-9_:]*.
func validMetricName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// validLabelName: [a-zA-Z_][a-zA-Z0-9_]*, not starting with the "__" that
// Prometheus keeps for itself.
func validLabelName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != "" && !strings.HasPrefix(s, "__")
}
