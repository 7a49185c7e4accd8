package monit

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vigil-bosh/vigil/internal/connlimit"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// maxBody caps a POST body: the agent sends "action=stop".
const maxBody = 4 << 10

// Server answers monit's HTTP API for the engine currently in force.
type Server struct {
	cur      atomic.Pointer[serving]
	hostname string
	now      func() time.Time
}

// serving is what a request is answered with; Swap replaces it whole.
type serving struct {
	engine *Engine
	creds  []monitrc.Credential
	// anyAddress lets peers other than loopback in (set httpd allow HOST,
	// or an address that is not loopback).
	anyAddress bool
}

// ReadCredentials returns the users of httpd: inline ones and those of each
// cleartext file ("user:password" per line; the first ':' splits).
func ReadCredentials(h *monitrc.HTTPD) ([]monitrc.Credential, error) {
	creds := append([]monitrc.Credential(nil), h.Users...)
	for _, f := range h.Cleartext {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read credentials: %w", err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			l = strings.TrimSpace(l)
			if u, p, ok := strings.Cut(l, ":"); ok && u != "" && !strings.HasPrefix(l, "#") {
				creds = append(creds, monitrc.Credential{User: u, Password: p})
			}
		}
	}
	return creds, nil
}

// NewServer returns a server for e. Credentials come from e's httpd
// settings; without any, every request is refused.
func NewServer(e *Engine, now func() time.Time) (*Server, error) {
	s := &Server{now: now}
	s.hostname, _ = os.Hostname()
	if err := s.Swap(e); err != nil {
		return nil, err
	}
	return s, nil
}

// Swap puts a new engine (a reload) in force and re-reads the credentials.
func (s *Server) Swap(e *Engine) error {
	h := e.Config().HTTPD
	if h == nil {
		return errors.New("the control file has no set httpd")
	}
	creds, err := ReadCredentials(h)
	if err != nil {
		return err
	}
	v := &serving{engine: e, creds: creds, anyAddress: len(h.Allow) > 0}
	if ip := net.ParseIP(h.Address); h.Address != "" && h.Address != "localhost" && (ip == nil || !ip.IsLoopback()) {
		v.anyAddress = true
	}
	s.cur.Store(v)
	return nil
}

// Addr is the listen address httpd names (127.0.0.1 when none is set, so
// that only loopback is served unless configured).
func Addr(h *monitrc.HTTPD) string {
	a := h.Address
	if a == "" {
		a = "127.0.0.1"
	}
	return net.JoinHostPort(a, fmt.Sprint(h.Port))
}

// Serve serves on ln until ctx is done, then gives requests in flight up to
// 5 s, closes ln and returns. It returns early, with the error, if serving
// fails; either way no goroutine of it is left running. Anything on the
// machine can connect, so what a client can hold is bounded: at most
// connlimit.PerPeer connections at once for each peer, root's never
// waiting on another user's (connlimit.Listener; a listener already
// bounded keeps its bounds), 5 s for the headers, 15 s idle between
// requests, 16 KiB of headers, and a refused request (403, 401) closes
// its connection.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 15 * time.Second, MaxHeaderBytes: 16 << 10}
	ln = connlimit.Listener(ln, connlimit.Defaults())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve monit api: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve monit api: %w", err)
	}
	return nil
}

func authorized(creds []monitrc.Credential, r *http.Request) bool {
	u, p, ok := r.BasicAuth()
	if !ok {
		return false
	}
	good := 0
	for _, c := range creds {
		uok := subtle.ConstantTimeCompare([]byte(u), []byte(c.User))
		pok := subtle.ConstantTimeCompare([]byte(p), []byte(c.Password))
		good |= uok & pok
	}
	return good == 1
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", "monit "+Version)
	v := s.cur.Load()
	if !v.anyAddress && !loopback(r.RemoteAddr) {
		w.Header().Set("Connection", "close")
		http.Error(w, "You are not authorized to access monit. Either you supplied the wrong credentials (e.g. bad password), or your browser doesn't understand how to supply the credentials required", http.StatusForbidden)
		return
	}
	if !authorized(v.creds, r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="monit"`)
		w.Header().Set("Connection", "close") // a refused client holds nothing

		http.Error(w, "You are not authorized to access monit. Either you supplied the wrong credentials (e.g. bad password), or your browser doesn't understand how to supply the credentials required", http.StatusUnauthorized)
		return
	}
	e := v.engine
	h := Host{ID: fmt.Sprintf("%x", e.Started().UnixNano()), Hostname: s.hostname, Now: s.now()}
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == "/_status" || r.URL.Path == "/_status2"):
		switch q := r.URL.Query(); {
		case q.Get("format") == "xml":
			w.Header().Set("Content-Type", "text/xml; charset=ISO-8859-1")
			_, _ = w.Write(StatusXML(e, h))
		case q.Get("level") == "summary":
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(latin1(Summary(e, h))))
		default:
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(latin1(FullStatus(e, h))))
		}
	case r.Method == http.MethodGet && r.URL.Path == "/":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(latin1(Summary(e, h))))
	case r.Method == http.MethodPost && r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/_"):
		s.post(w, r, e, h)
	case r.Method == http.MethodGet:
		name := strings.TrimPrefix(r.URL.Path, "/")
		if _, ok := e.Config().Lookup(name); !ok {
			http.Error(w, "There is no service by that name", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte(latin1(Summary(e, h))))
	default:
		http.Error(w, "Method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *Server) post(w http.ResponseWriter, r *http.Request, e *Engine, h Host) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "Invalid action", http.StatusBadRequest)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	err := e.Post(name, r.PostForm.Get("action"))
	switch {
	case errors.Is(err, ErrNoService):
		http.Error(w, err.Error(), http.StatusNotFound)
	case errors.Is(err, ErrAction):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case errors.Is(err, ErrPending):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	default:
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(latin1(Summary(e, h))))
	}
}
