package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/metrics"
	"github.com/vigil-bosh/vigil/web"
)

// httpOptions are the daemon's flags for its status page (package web).
type httpOptions struct {
	addr        string // --http host:port; empty serves no page
	credentials string // --http-credentials; empty generates them
	allowRemote bool   // --http-allow-remote
	// metrics, when set, is served at /metrics behind the page's
	// authentication (the Prometheus metrics handler goes here).
	metrics http.Handler
}

func (o *httpOptions) register(c *command) {
	c.define("http", "serve the status page (and /metrics) on this `HOST:PORT`, e.g. 127.0.0.1:2823", "", false,
		func(n string) { c.fs.StringVar(&o.addr, n, "", "") })
	c.define("http-credentials", "`FILE` of user:password lines for the status page (default: generated into ROOT/sys/run/vigil/http-credentials)", "", false,
		func(n string) { c.fs.StringVar(&o.credentials, n, "", "") })
	c.completes(completeFile)
	c.define("http-allow-remote", "let --http listen on an address that is not loopback", "", true,
		func(n string) { c.fs.BoolVar(&o.allowRemote, n, false, "") })
}

// check refuses page flags given without --http.
func (o *httpOptions) check(c *command) error {
	if o.addr == "" && (o.credentials != "" || o.allowRemote) {
		return c.usagef("--http-credentials and --http-allow-remote need --http")
	}
	return nil
}

// listenHTTP reads or generates the credentials and listens for the status
// page of b, so that a bad address or file fails before anything starts.
// The function it returns serves until its context ends; nil when no page
// was asked for.
func listenHTTP(o httpOptions, l boshpath.Layout, b web.Backend, log *slog.Logger) (func(context.Context) error, error) {
	if o.addr == "" {
		return nil, nil
	}
	p, err := web.Open(web.Config{Backend: b, Metrics: o.metrics, Layout: l, Log: log}, o.addr, o.allowRemote, o.credentials)
	if err != nil {
		return nil, err
	}
	if p.Generated {
		log.Info("status page: generated credentials (user vigil)", "file", p.CredentialsFile)
	}
	log.Info("status page", "url", p.URL(), "credentials", p.CredentialsFile)
	return p.Serve, nil
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

// followingEvents returns serve, which also feeds m from src's events
// while it serves (the metrics that count exits, restarts and OOM kills);
// it returns once both have ended.
func followingEvents(serve func(context.Context) error, m *metrics.Metrics, src metrics.EventSource) func(context.Context) error {
	return func(ctx context.Context) error {
		followed := make(chan error, 1)
		go func() { followed <- m.Follow(ctx, src) }()
		err := serve(ctx)
		if ferr := <-followed; err == nil {
			err = ferr
		}
		return err
	}
}
