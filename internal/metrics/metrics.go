// Package metrics exposes the daemon in Prometheus' text format: per
// process figures read from the daemon's status at each scrape, the
// daemon's own histograms and counters, fed from its event stream and its
// control server, and its Go runtime's and process's own figures. It
// writes the format itself (internal/promtext): a metrics library would
// initialise itself in every vigil process, each per-process init and each
// command included.
//
// Wiring: m := New(); pass
// control.WithRequestObserver(m.ObserveRequest) to the control server;
// run m.Follow(ctx, daemon) in a goroutine; serve m.Handler(daemon).
package metrics

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/procstat"
	"github.com/vigil-bosh/vigil/internal/promtext"
)

// StatusSource is what the per-process metrics are read from at each scrape.
type StatusSource interface {
	Status(ctx context.Context) (control.Status, error)
}

// EventSource is the daemon's event stream (see control.EventSource).
type EventSource interface {
	Events(ctx context.Context, recent int) (<-chan control.Event, error)
}

// Metrics is the daemon's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	mu             sync.Mutex
	restartLatency *histogram
	requests       map[string]*histogram // by route
	configErrors   uint64
	eventsLost     uint64
	exits          map[[2]string]*exitTrack // by job and process
	drains         map[string]*[2]uint64    // by job: succeeded, failed (vigil container)
}

// New returns metrics with nothing observed yet.
func New() *Metrics {
	return &Metrics{
		restartLatency: newHistogram(restartBounds()),
		requests:       map[string]*histogram{},
		exits:          map[[2]string]*exitTrack{},
		drains:         map[string]*[2]uint64{},
	}
}

// ObserveRequest records one control API request; its signature is that of
// control.WithRequestObserver's argument.
func (m *Metrics) ObserveRequest(route string, _ int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.requests[route]
	if h == nil {
		h = newHistogram(requestBounds())
		m.requests[route] = h
	}
	h.observe(d.Seconds())
}

// Observe counts what one event says: restart latencies, configuration
// errors, exits by reason, lost events.
func (m *Metrics) Observe(ev control.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ev.Process != "" {
		k := [2]string{ev.Job, ev.Process}
		t := m.exits[k]
		if t == nil {
			t = &exitTrack{}
			m.exits[k] = t
		}
		t.observe(ev)
	}
	switch ev.Kind {
	case control.EventRestarted:
		if ev.DownSeconds > 0 {
			m.restartLatency.observe(ev.DownSeconds)
		}
	case control.EventConfigError:
		m.configErrors++
	case control.EventLost:
		m.eventsLost += uint64(ev.Lost)
	case control.EventDrained, control.EventDrainFailed:
		n := m.drains[ev.Job]
		if n == nil {
			n = &[2]uint64{}
			m.drains[ev.Job] = n
		}
		if ev.Kind == control.EventDrained {
			n[0]++
		} else {
			n[1]++
		}
	}
}

// Follow observes src's events, the recent ones it still keeps first (so
// that a Follow started with the daemon misses nothing), until ctx is done
// or the stream ends. Call it once per Metrics: a second call would count
// the recent events again.
func (m *Metrics) Follow(ctx context.Context, src EventSource) error {
	events, err := src.Events(ctx, 1<<16)
	if err != nil {
		return fmt.Errorf("metrics: follow events: %w", err)
	}
	for ev := range events {
		m.Observe(ev)
	}
	return nil
}

// exitsOf is the counts of job/process's exits by reason.
func (m *Metrics) exitsOf(job, process string) [reasonCount]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.exits[[2]string{job, process}]; t != nil {
		return t.counts
	}
	return [reasonCount]int{}
}

// addDaemon adds the daemon's own histograms and counters.
func (m *Metrics) addDaemon(s *promtext.Set) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.Histogram("vigil_restart_latency_seconds", "Time from a process's exit to its automatic restart running, backoff included.").
		AddHistogram(m.restartLatency.value())
	req := s.Histogram("vigil_control_request_duration_seconds", "Time to answer a control API request, by route (event streams excluded).")
	for route, h := range m.requests {
		req.AddHistogram(h.value(), "route", route)
	}
	s.Counter("vigil_config_load_errors_total", "Job configurations that failed to load, at start or reload.").
		Add(float64(m.configErrors))
	s.Counter("vigil_metrics_events_lost_total", "Events the metrics fell behind on (their counts may be short by as many).").
		Add(float64(m.eventsLost))
	if len(m.drains) > 0 {
		d := s.Counter("vigil_drains_total", "Drain scripts run by vigil container, by job and outcome (succeeded, failed).")
		for job, n := range m.drains {
			d.Add(float64(n[0]), "bosh_job", job, "outcome", "succeeded")
			d.Add(float64(n[1]), "bosh_job", job, "outcome", "failed")
		}
	}
}

// statusTimeout bounds the status a scrape reads (under the systemd back
// end it runs systemctl): a hung source never piles up scrapes.
const statusTimeout = 10 * time.Second

// Handler serves the metrics in Prometheus' text format, gzipped for a
// client that accepts it: the daemon's, its Go runtime's and process's,
// and each process's read from src at the scrape. A status that cannot be
// read fails the scrape: 500 with the error.
func (m *Metrics) Handler(src StatusSource) http.Handler {
	build := readBuild()
	boot, _ := procstat.BootTime() // without it, process_start_time_seconds is left out
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), statusTimeout)
		defer cancel()
		st, err := src.Status(ctx)
		if err != nil {
			http.Error(w, "metrics: read the status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		var s promtext.Set
		addProcesses(&s, st, build, m.exitsOf)
		m.addDaemon(&s)
		addGo(&s)
		addProcess(&s, boot)
		w.Header().Set("Content-Type", promtext.ContentType)
		var out io.Writer = w
		var z *gzip.Writer
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Add("Vary", "Accept-Encoding")
			z = gzip.NewWriter(w) // writes nothing before the first Write
			out = z
		}
		if n, err := s.WriteTo(out); err != nil && n == 0 {
			w.Header().Del("Content-Encoding") // nothing was written yet: the error can still be the reply
			http.Error(w, "metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		if z != nil {
			z.Close()
		}
	})
}

// acceptsGzip tells whether Accept-Encoding values take gzip: named, or
// "*", with a q above 0 (or none).
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			coding = strings.ToLower(strings.TrimSpace(coding))
			if coding != "gzip" && coding != "*" {
				continue
			}
			q := 1.0
			if p, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				q, _ = strconv.ParseFloat(strings.TrimSpace(p), 64) // unreadable: 0, refused
			}
			if q > 0 || coding == "gzip" {
				return q > 0
			}
		}
	}
	return false
}
