package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/history"
	"github.com/vigil-bosh/vigil/internal/metrics"
	"github.com/vigil-bosh/vigil/internal/web"
)

// httpOptions are the daemon's flags for its status page and its
// metrics-only listener (package web).
type httpOptions struct {
	addr        string // --http host:port; empty serves no page
	credentials string // --http-credentials; empty generates them
	allowRemote bool   // --http-allow-remote
	// The metrics-only listener: --metrics, --metrics-credentials (empty:
	// none), --metrics-allow-remote.
	metricsAddr, metricsCredentials string
	metricsAllowRemote              bool
}

func (o *httpOptions) register(c *command) {
	str := func(p *string, name, usage string) {
		c.define(name, usage, "", false, func(n string) { c.fs.StringVar(p, n, "", usage) })
	}
	boolean := func(p *bool, name, usage string) {
		c.define(name, usage, "", true, func(n string) { c.fs.BoolVar(p, n, false, usage) })
	}
	str(&o.addr, "http", "serve the status page (and /metrics) on this `HOST:PORT`, e.g. 127.0.0.1:2823")
	str(&o.credentials, "http-credentials", "`FILE` of user:password lines for the status page (default: generated into ROOT/sys/run/vigil/http-credentials)")
	c.completes(completeFile)
	boolean(&o.allowRemote, "http-allow-remote", "let --http listen on an address that is not loopback")
	str(&o.metricsAddr, "metrics", "serve the Prometheus metrics alone on this `HOST:PORT`, e.g. 127.0.0.1:2824")
	str(&o.metricsCredentials, "metrics-credentials", "`FILE` of user:password lines that --metrics asks for (default: no authentication)")
	c.completes(completeFile)
	boolean(&o.metricsAllowRemote, "metrics-allow-remote", "let --metrics listen on an address that is not loopback")
}

// check refuses listener flags given without their listener.
func (o *httpOptions) check(c *command) error {
	if o.addr == "" && (o.credentials != "" || o.allowRemote) {
		return c.usagef("--http-credentials and --http-allow-remote need --http")
	}
	if o.metricsAddr == "" && (o.metricsCredentials != "" || o.metricsAllowRemote) {
		return c.usagef("--metrics-credentials and --metrics-allow-remote need --metrics")
	}
	return nil
}

// wanted reports whether a listener is asked for: only then are metrics
// (and, with the page, a history) kept.
func (o *httpOptions) wanted() bool { return o.addr != "" || o.metricsAddr != "" }

// listenHTTP reads or generates the credentials and listens for the status
// page and the metrics-only listener that o asks for, serving b, so that a
// bad address or file fails before anything starts. The function it
// returns serves them until its context ends, and meanwhile feeds m from
// b's events and the page's history from b's status (one read a step);
// it returns once all of that has ended. It is nil when o asks for none.
func listenHTTP(o httpOptions, l boshpath.Layout, b web.Backend, m *metrics.Metrics, log *slog.Logger) (func(context.Context) error, error) {
	if !o.wanted() {
		return nil, nil
	}
	var serves []func(context.Context) error
	var hist *history.Store
	if o.addr != "" {
		hist = history.New(history.Config{})
		p, err := web.Open(web.Config{Backend: b, Metrics: m.Handler(b), History: hist, Layout: l, Log: log},
			o.addr, o.allowRemote, o.credentials)
		if err != nil {
			return nil, err
		}
		if p.Generated {
			log.Info("status page: generated credentials (user vigil)", "file", p.CredentialsFile)
		}
		log.Info("status page", "url", p.URL(), "credentials", p.CredentialsFile)
		serves = append(serves, p.Serve, func(ctx context.Context) error { hist.Run(ctx, b); return nil })
	}
	if o.metricsAddr != "" {
		mp, err := web.OpenMetrics(m.Handler(b), o.metricsAddr, o.metricsAllowRemote, o.metricsCredentials, log)
		if err != nil {
			return nil, err
		}
		auth := "none"
		if mp.CredentialsFile != "" {
			auth = mp.CredentialsFile
		}
		log.Info("metrics", "url", mp.URL(), "credentials", auth)
		serves = append(serves, mp.Serve)
	}
	serves = append(serves, func(ctx context.Context) error { return m.Follow(ctx, b) })
	return func(ctx context.Context) error {
		errs := make([]error, len(serves))
		var wg sync.WaitGroup
		for i, serve := range serves {
			wg.Go(func() { errs[i] = serve(ctx) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// serveAlongside runs serve (when not nil) until run has returned, and
// returns run's error, else serve's.
func serveAlongside(serve func(context.Context) error, run func() error) error {
	if serve == nil {
		return run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx) }()
	err := run()
	cancel()
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}
