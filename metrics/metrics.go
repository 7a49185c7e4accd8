// Package metrics exposes the daemon in Prometheus' text format: per
// process figures read from the daemon's status at each scrape, and the
// daemon's own histograms and counters, fed from its event stream and its
// control server. Everything lives in a private registry.
//
// Wiring: m := New(); pass
// control.WithRequestObserver(m.ObserveRequest) to the control server;
// run m.Follow(ctx, daemon) in a goroutine; serve m.Handler(daemon).
package metrics

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigil-bosh/vigil/control"
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
	reg            *prometheus.Registry
	restartLatency prometheus.Histogram
	requests       *prometheus.HistogramVec
	configErrors   prometheus.Counter
	eventsLost     prometheus.Counter

	mu    sync.Mutex
	exits map[[2]string]*exitTrack // by job and process
}

// New returns metrics with the daemon-level collectors registered (and Go's
// and the daemon process's own).
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		restartLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vigil_restart_latency_seconds",
			// From an immediate restart (milliseconds) to the longest backoff (a minute) and beyond.
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
			Help:    "Time from a process's exit to its automatic restart running, backoff included.",
		}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vigil_control_request_duration_seconds",
			// From a status query (under a millisecond) to an action waiting out a stop ladder (about 20 s).
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
			Help:    "Time to answer a control API request, by route (event streams excluded).",
		}, []string{"route"}),
		configErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_config_load_errors_total",
			Help: "Job configurations that failed to load, at start or reload.",
		}),
		eventsLost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_metrics_events_lost_total",
			Help: "Events the metrics fell behind on (their counts may be short by as many).",
		}),
		exits: map[[2]string]*exitTrack{},
	}
	m.reg.MustRegister(m.restartLatency, m.requests, m.configErrors, m.eventsLost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveRequest records one control API request; its signature is that of
// control.WithRequestObserver's argument.
func (m *Metrics) ObserveRequest(route string, _ int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route).Observe(d.Seconds())
}

// Observe counts what one event says: restart latencies, configuration
// errors, exits by reason, lost events.
func (m *Metrics) Observe(ev control.Event) {
	if ev.Process != "" {
		m.mu.Lock()
		k := [2]string{ev.Job, ev.Process}
		t := m.exits[k]
		if t == nil {
			t = &exitTrack{}
			m.exits[k] = t
		}
		t.observe(ev)
		m.mu.Unlock()
	}
	switch ev.Kind {
	case control.EventRestarted:
		if ev.DownSeconds > 0 {
			m.restartLatency.Observe(ev.DownSeconds)
		}
	case control.EventConfigError:
		m.configErrors.Inc()
	case control.EventLost:
		m.eventsLost.Add(float64(ev.Lost))
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

// Handler serves the metrics in Prometheus' formats: the daemon's, and
// each process's read from src at the scrape. A status that cannot be read
// fails the scrape's per-process part with an error in the reply.
func (m *Metrics) Handler(src StatusSource) http.Handler {
	procs := prometheus.NewRegistry()
	procs.MustRegister(&processCollector{src: src, m: m, d: newDescs(), build: readBuild()})
	return promhttp.HandlerFor(prometheus.Gatherers{m.reg, procs}, promhttp.HandlerOpts{
		ErrorHandling: promhttp.HTTPErrorOnError,
	})
}
