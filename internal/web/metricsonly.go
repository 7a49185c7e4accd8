package web

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// MetricsServer serves the metrics alone (GET /metrics), for a Prometheus
// that scrapes the VM the way it scrapes a node exporter: with its own
// credentials, or none, as the operator chooses. Nothing else is served
// on it: no page, no action, no log.
type MetricsServer struct {
	h    http.Handler
	auth *checker // nil: no authentication
	log  *slog.Logger
}

// NewMetricsServer returns a server of h behind creds (none: no
// authentication). log may be nil (discard).
func NewMetricsServer(h http.Handler, creds []Credential, log *slog.Logger) (*MetricsServer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &MetricsServer{h: h, log: log}
	if len(creds) > 0 {
		c, err := newChecker(creds)
		if err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		m.auth = &c
	}
	return m, nil
}

// ServeHTTP answers GET (or HEAD) /metrics, after the credentials when
// there are some; anything else is 404 (405 for another method).
func (m *MetricsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if m.auth != nil {
		user, pass, ok := r.BasicAuth()
		if !ok || !m.auth.check(user, pass) {
			if ok {
				m.log.Warn("metrics: wrong credentials", "remote", r.RemoteAddr)
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="vigil metrics", charset="UTF-8"`)
			w.Header().Set("Connection", "close") // a refused client holds nothing
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
	}
	switch {
	case r.URL.Path != "/metrics":
		http.NotFound(w, r)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		m.h.ServeHTTP(w, r)
	}
}

// Serve serves on ln until ctx is done (as Server.Serve does).
func (m *MetricsServer) Serve(ctx context.Context, ln net.Listener) error {
	return runHTTP(ctx, ln, m, 30*time.Second, m.log, func() {}, "metrics")
}

// MetricsPage is a metrics-only listener ready to serve.
type MetricsPage struct {
	Server   *MetricsServer
	Listener net.Listener
	// CredentialsFile is where the credentials came from, "" for none.
	CredentialsFile string
}

// OpenMetrics reads the credentials in credentialsFile ("" for none: no
// authentication), builds the server of h and listens on addr: a loopback
// address unless allowRemote. Nothing is served until Serve.
func OpenMetrics(h http.Handler, addr string, allowRemote bool, credentialsFile string, log *slog.Logger) (*MetricsPage, error) {
	var creds []Credential
	if credentialsFile != "" {
		var err error
		if creds, err = ReadCredentials(credentialsFile); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	srv, err := NewMetricsServer(h, creds, log)
	if err != nil {
		return nil, err
	}
	ln, err := listen(addr, allowRemote, "the metrics", "the metrics are readable by anyone who reaches them", "--metrics-allow-remote")
	if err != nil {
		return nil, err
	}
	return &MetricsPage{Server: srv, Listener: ln, CredentialsFile: credentialsFile}, nil
}

// URL is the metrics' address.
func (p *MetricsPage) URL() string { return "http://" + p.Listener.Addr().String() + "/metrics" }

// Serve serves until ctx is done.
func (p *MetricsPage) Serve(ctx context.Context) error { return p.Server.Serve(ctx, p.Listener) }
