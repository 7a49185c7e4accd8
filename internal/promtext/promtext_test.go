package promtext

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads text with Prometheus' own text parser.
func parse(t testing.TB, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus' parser: %v\n%s", err, text)
	}
	return fams
}

func write(t testing.TB, s *Set) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := s.WriteTo(&b)
	if err != nil {
		t.Fatal(err)
	}
	if int(n) != b.Len() {
		t.Fatalf("WriteTo says %d bytes, wrote %d", n, b.Len())
	}
	return b.Bytes()
}

// sample is a set with one family of each type, the series added out of
// order.
func sample() *Set {
	var s Set
	up := s.Gauge("up_now", "1 when up.")
	up.Add(0, "job", "web", "proc", "b")
	up.Add(1, "proc", "a", "job", "web") // labels in any order
	s.Counter("events_total", "Events seen.").Add(3)
	h := s.Histogram("latency_seconds", "Latency.")
	h.AddHistogram(HistogramValue{Buckets: []Bucket{{0.1, 1}, {1, 3}}, Sum: 2.5, Count: 4}, "route", "b")
	h.AddHistogram(HistogramValue{Buckets: []Bucket{{0.1, 0}, {1, 0}}, Sum: 0, Count: 0}, "route", "a")
	s.Summary("pause_seconds", "Pauses.").AddSummary(SummaryValue{
		Quantiles: []Quantile{{0, 0.001}, {0.5, 0.002}, {1, 0.01}}, Sum: 0.5, Count: 100})
	s.Untyped("odd", "Untyped.").Add(math.Inf(1))
	s.Gauge("never_set", "No series: not written.")
	return &s
}

// TestExactText: the families by name, each family's series by labels,
// the labels of each by name, histograms with their +Inf bucket, _sum and
// _count, summaries with their quantiles.
func TestExactText(t *testing.T) {
	want := `# HELP events_total Events seen.
# TYPE events_total counter
events_total 3
# HELP latency_seconds Latency.
# TYPE latency_seconds histogram
latency_seconds_bucket{route="a",le="0.1"} 0
latency_seconds_bucket{route="a",le="1"} 0
latency_seconds_bucket{route="a",le="+Inf"} 0
latency_seconds_sum{route="a"} 0
latency_seconds_count{route="a"} 0
latency_seconds_bucket{route="b",le="0.1"} 1
latency_seconds_bucket{route="b",le="1"} 3
latency_seconds_bucket{route="b",le="+Inf"} 4
latency_seconds_sum{route="b"} 2.5
latency_seconds_count{route="b"} 4
# HELP odd Untyped.
# TYPE odd untyped
odd +Inf
# HELP pause_seconds Pauses.
# TYPE pause_seconds summary
pause_seconds{quantile="0"} 0.001
pause_seconds{quantile="0.5"} 0.002
pause_seconds{quantile="1"} 0.01
pause_seconds_sum 0.5
pause_seconds_count 100
# HELP up_now 1 when up.
# TYPE up_now gauge
up_now{job="web",proc="a"} 1
up_now{job="web",proc="b"} 0
`
	if got := string(write(t, sample())); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestPrometheusReadsIt: Prometheus' parser reads every family with its
// type, help, labels and values.
func TestPrometheusReadsIt(t *testing.T) {
	fams := parse(t, write(t, sample()))
	if len(fams) != 5 {
		t.Errorf("%d families, want 5: %v", len(fams), fams)
	}
	up := fams["up_now"]
	if up.GetType() != dto.MetricType_GAUGE || up.GetHelp() != "1 when up." || len(up.GetMetric()) != 2 ||
		up.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Errorf("up_now: %v", up)
	}
	h := fams["latency_seconds"].GetMetric()[1].GetHistogram()
	if b := h.GetBucket(); len(b) != 3 || b[1].GetUpperBound() != 1 || b[1].GetCumulativeCount() != 3 ||
		!math.IsInf(b[2].GetUpperBound(), 1) || h.GetSampleSum() != 2.5 || h.GetSampleCount() != 4 {
		t.Errorf("histogram: %v", h)
	}
	sm := fams["pause_seconds"].GetMetric()[0].GetSummary()
	if q := sm.GetQuantile(); len(q) != 3 || q[1].GetQuantile() != 0.5 || q[1].GetValue() != 0.002 || sm.GetSampleCount() != 100 {
		t.Errorf("summary: %v", sm)
	}
	if v := fams["odd"].GetMetric()[0].GetUntyped().GetValue(); !math.IsInf(v, 1) {
		t.Errorf("odd = %v", v)
	}
}

// TestStableOrder: the same series added in another order give the same
// text.
func TestStableOrder(t *testing.T) {
	var a, b Set
	for _, p := range []string{"x", "b", "a"} {
		a.Gauge("g", "G.").Add(1, "p", p, "j", "1")
		a.Counter("c_total", "C.").Add(2, "p", p)
	}
	for _, p := range []string{"a", "x", "b"} {
		b.Counter("c_total", "C.").Add(2, "p", p)
		b.Gauge("g", "G.").Add(1, "j", "1", "p", p)
	}
	if x, y := write(t, &a), write(t, &b); !bytes.Equal(x, y) {
		t.Fatalf("two orders, two texts:\n%s\n%s", x, y)
	}
}

// TestEscaping: backslash, double quote and newline in label values,
// backslash and newline in help texts, and invalid UTF-8 as U+FFFD.
func TestEscaping(t *testing.T) {
	var s Set
	s.Gauge("g", "a \\ help\nover \"two\" lines").Add(1, "v", "q\"uo\\te\nd", "bad", "a\xffb")
	text := write(t, &s)
	want := "# HELP g a \\\\ help\\nover \"two\" lines\n# TYPE g gauge\ng{bad=\"a\uFFFDb\",v=\"q\\\"uo\\\\te\\nd\"} 1\n"
	if string(text) != want {
		t.Fatalf("got %q\nwant %q", text, want)
	}
	m := parse(t, text)["g"]
	if m.GetHelp() != "a \\ help\nover \"two\" lines" {
		t.Errorf("help read back as %q", m.GetHelp())
	}
	if l := m.GetMetric()[0].GetLabel(); l[1].GetValue() != "q\"uo\\te\nd" || l[0].GetValue() != "a\uFFFDb" {
		t.Errorf("labels read back as %v", l)
	}
}

// TestMisuse: each misuse makes WriteTo fail and write nothing.
func TestMisuse(t *testing.T) {
	for name, misuse := range map[string]func(s *Set){
		"another type":       func(s *Set) { s.Gauge("m", "M."); s.Counter("m", "M.") },
		"another help":       func(s *Set) { s.Gauge("m", "M."); s.Gauge("m", "N.") },
		"metric name":        func(s *Set) { s.Gauge("1m", "M.").Add(1) },
		"metric name dash":   func(s *Set) { s.Gauge("a-b", "M.").Add(1) },
		"empty name":         func(s *Set) { s.Gauge("", "M.").Add(1) },
		"label name":         func(s *Set) { s.Gauge("m", "M.").Add(1, "a b", "x") },
		"reserved label":     func(s *Set) { s.Gauge("m", "M.").Add(1, "__name__", "x") },
		"odd labels":         func(s *Set) { s.Gauge("m", "M.").Add(1, "a") },
		"label twice":        func(s *Set) { s.Gauge("m", "M.").Add(1, "a", "x", "a", "y") },
		"two alike":          func(s *Set) { g := s.Gauge("m", "M."); g.Add(1, "a", "x"); g.Add(2, "a", "x") },
		"le in histogram":    func(s *Set) { s.Histogram("h", "H.").AddHistogram(HistogramValue{}, "le", "1") },
		"quantile label":     func(s *Set) { s.Summary("s", "S.").AddSummary(SummaryValue{}, "quantile", "1") },
		"bounds decrease":    func(s *Set) { s.Histogram("h", "H.").AddHistogram(HistogramValue{Buckets: []Bucket{{1, 0}, {0.5, 0}}}) },
		"infinite bound":     func(s *Set) { s.Histogram("h", "H.").AddHistogram(HistogramValue{Buckets: []Bucket{{math.Inf(1), 0}}}) },
		"sample in hist":     func(s *Set) { s.Histogram("h", "H.").Add(1) },
		"histogram in gauge": func(s *Set) { s.Gauge("m", "M.").AddHistogram(HistogramValue{}) },
		"summary in gauge":   func(s *Set) { s.Gauge("m", "M.").AddSummary(SummaryValue{}) },
		"name of a series": func(s *Set) {
			s.Histogram("h", "H.").AddHistogram(HistogramValue{})
			s.Gauge("h_count", "C.").Add(1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := sample()
			misuse(s)
			var b bytes.Buffer
			if _, err := s.WriteTo(&b); err == nil || b.Len() > 0 {
				t.Fatalf("WriteTo: %v, wrote %q", err, b.String())
			}
		})
	}
}

// FuzzEscaping: whatever a label value and a help text hold, Prometheus'
// parser reads back exactly one series with that value (invalid UTF-8 as
// U+FFFD) and that help (less blanks at its start): nothing in them can end a line or a value early.
func FuzzEscaping(f *testing.F) {
	for _, seed := range [][2]string{{"plain", "Help."}, {`a"b\c`, "x\ny"}, {"\n\"}\n x 1\n", "\\n"}, {"\xff\xfe", "\x00"}, {`\`, `\`}, {"v", " \t leading blanks"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, value, help string) {
		var s Set
		s.Gauge("g", help).Add(7, "v", value)
		s.Counter("c_total", "C.").Add(1)
		fams := parse(t, write(t, &s))
		g := fams["g"]
		if len(fams) != 2 || len(g.GetMetric()) != 1 {
			t.Fatalf("families %v", fams)
		}
		wantHelp := strings.TrimLeft(strings.ToValidUTF8(help, "\uFFFD"), " \t") // a reader skips blanks before the help
		if g.GetHelp() != wantHelp && !(wantHelp == "" && g.Help == nil) {
			t.Errorf("help %q read back as %q", help, g.GetHelp())
		}
		l := g.GetMetric()[0].GetLabel()
		if len(l) != 1 || l[0].GetValue() != strings.ToValidUTF8(value, "\uFFFD") || !utf8.ValidString(l[0].GetValue()) {
			t.Errorf("value %q read back as %v", value, l)
		}
		if g.GetMetric()[0].GetGauge().GetValue() != 7 {
			t.Errorf("value 7 read back as %v", g.GetMetric()[0])
		}
	})
}
