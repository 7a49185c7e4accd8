// Package web serves vigil's status page: every job and process with its
// state, usage, health and history graphs, start/stop/restart buttons, an
// event timeline, a live view of each process's logs, the status and the
// history as JSON, and a live refresh over server-sent events. It is
// server-rendered HTML (html/template, embedded files, no build step; the
// page's script draws the graphs as SVG), behind HTTP basic auth on every
// route; actions are POSTs that need a per-server token and a same-origin
// request. It also serves a metrics-only listener (MetricsServer).
package web

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/connlimit"
	"github.com/vigil-bosh/vigil/internal/history"
)

// Backend is what the page shows and acts on: the daemon (either back end).
type Backend interface {
	Status(ctx context.Context) (control.Status, error)
	// Act blocks until the processes have settled or ctx ends. The page's
	// user is ctx's requester (control.WithRequester).
	Act(ctx context.Context, req control.ActionRequest) ([]control.ProcessStatus, error)
	// Changes returns a channel closed at the next change of any process;
	// call it again after each close.
	Changes() <-chan struct{}
	// Events sends up to recent past events, then each new one, on a
	// channel closed once ctx is done (see control.EventSource).
	Events(ctx context.Context, recent int) (<-chan control.Event, error)
}

// History is the history the graphs are drawn from (history.Store).
type History interface {
	Step() time.Duration
	Query(span time.Duration, job, process string) []history.Series
	// Changes returns a channel closed at the next recording.
	Changes() <-chan struct{}
}

// Config configures a Server. Zero durations pick the defaults noted.
type Config struct {
	Backend     Backend
	Credentials []Credential // at least one
	// Metrics, when set, is served at /metrics behind the same auth.
	Metrics http.Handler
	// History, when set, feeds the graphs and GET /v1/history.
	History History
	Layout  boshpath.Layout // where the process logs are, and the agent's spec
	Log     *slog.Logger    // nil means discard
	// ActionTimeout bounds how long an action's request waits for the
	// processes to settle (default 30 s); the action goes on after it.
	ActionTimeout time.Duration
	// Refresh is how often an event stream re-sends the status without a
	// change, for usage figures (default 5 s).
	Refresh time.Duration
	// MinInterval is the least time between two updates of one event
	// stream: a burst of changes is coalesced into one (default 250 ms).
	MinInterval time.Duration
	// MaxStreams bounds the live streams open at once, a status page's or
	// a log view's each (default 16, a quarter of the listener's 64
	// connections, so that pages, actions and scrapes always find one):
	// one more is answered 503, and the page tries again.
	MaxStreams int
}

// defaultMaxStreams is the live streams a server holds at once: a
// quarter of a peer's connections at most, so that the others are always
// there for pages, actions and scrapes.
const defaultMaxStreams = connlimit.PerPeer / 4

// maxBody caps a request body: an action form is a few fields.
const maxBody = 4 << 10

//go:embed assets
var assets embed.FS

// Server is the status page's http.Handler. Serve runs it on a listener;
// used elsewhere (httptest), Close ends its event streams.
type Server struct {
	cfg     Config
	log     *slog.Logger
	auth    checker
	token   string // the CSRF token of this server's life
	tmpl    *template.Template
	mux     *http.ServeMux
	cop     *http.CrossOriginProtection
	streams chan struct{} // a slot per live stream open (see openStream)
	// streamEnded, when set (by tests), is called as a stream gives its
	// slot back.
	streamEnded func()
	spec        *specCache    // the BOSH instance, from the agent's spec
	quit        chan struct{} // closed by Close: event streams end
	closer      sync.Once
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("web: no backend")
	}
	if cfg.Layout.Root() == "" {
		return nil, errors.New("web: no BOSH layout for the log paths")
	}
	auth, err := newChecker(cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	if cfg.ActionTimeout <= 0 {
		cfg.ActionTimeout = 30 * time.Second
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = 250 * time.Millisecond
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = defaultMaxStreams
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"label": stateLabel, "problem": problemText, "path": url.PathEscape, "spark": sparkOf}).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	s := &Server{cfg: cfg, log: log, auth: auth, token: rand.Text(), tmpl: tmpl,
		mux: http.NewServeMux(), cop: http.NewCrossOriginProtection(), streams: make(chan struct{}, cfg.MaxStreams),
		spec: &specCache{path: cfg.Layout.AgentSpec()}, quit: make(chan struct{})}
	s.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.Warn("web: cross-origin action refused", "origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
	}))
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.page)
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.HandleFunc("GET /logs/{job}/{process}", s.logs)
	s.mux.HandleFunc("GET /logs/{job}/{process}/stream", s.follow)
	s.mux.HandleFunc("GET /v1/status", s.apiStatus)
	s.mux.HandleFunc("GET /v1/history", s.apiHistory)
	s.mux.Handle("POST /action", s.cop.Handler(http.HandlerFunc(s.action)))
	if cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", cfg.Metrics)
	}
	return s, nil
}

// ServeHTTP checks the credentials, sets the security headers and
// dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	user, pass, ok := r.BasicAuth()
	if !ok || !s.auth.check(user, pass) {
		if ok {
			s.log.Warn("web: wrong credentials", "remote", r.RemoteAddr)
		}
		h.Set("WWW-Authenticate", `Basic realm="vigil", charset="UTF-8"`)
		h.Set("Connection", "close") // a refused client holds nothing
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	s.mux.ServeHTTP(w, r)
}

// Close ends every event stream and makes new ones end at once. Serve
// calls it when its context ends.
func (s *Server) Close() { s.closer.Do(func() { close(s.quit) }) }

// Serve serves on ln until ctx is done, then ends the event streams, gives
// other requests in flight up to 5 s, closes ln and returns. It returns
// early, with the error, if serving fails; either way no goroutine of it
// is left running.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// The event streams extend their own write deadlines; an action waits
	// up to ActionTimeout, so writes may take that long and more.
	return runHTTP(ctx, ln, s, s.cfg.ActionTimeout+15*time.Second, s.log, s.Close, "status page")
}

// runHTTP runs an HTTP server for h on ln until ctx is done (see
// Server.Serve), bounding what a client can hold: connlimit.PerPeer
// connections at once for each peer (connlimit.Listener), 5 s for the
// headers, 15 s idle, 16 KiB of headers (a request without credentials
// closes its connection: the handlers' doing). ending runs first, once
// the serving is to end, to end what streams.
func runHTTP(ctx context.Context, ln net.Listener, h http.Handler, writeTimeout time.Duration, log *slog.Logger,
	ending func(), what string) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: writeTimeout, IdleTimeout: 15 * time.Second, MaxHeaderBytes: 16 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	ln = connlimit.Listener(ln, connlimit.Defaults())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		ending()
		return fmt.Errorf("serve %s: %w", what, err)
	case <-ctx.Done():
	}
	ending()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", what, err)
	}
	return nil
}

// Listen listens on addr (host:port). Unless allowRemote, the host must be
// a loopback address or "localhost", and the address bound must be
// loopback: the page controls every process.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	return listen(addr, allowRemote, "the status page", "the status page controls every process", "--http-allow-remote")
}

// listen is Listen for what, which must stay on loopback because of why
// unless allowRemote (given as flag).
func listen(addr string, allowRemote bool, what, why, flag string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !allowRemote && !isLoopbackHost(host) {
		return nil, fmt.Errorf("listen address %q is not loopback: %s; give a 127.0.0.1 or [::1] address, or %s to serve it on other interfaces", addr, why, flag)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for %s: %w", what, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !allowRemote && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nil, fmt.Errorf("listen address %q bound %s, which is not loopback", addr, ln.Addr())
	}
	return ln, nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
