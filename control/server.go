package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/connlimit"
)

// maxRequest caps a request body; every request is a few names.
const maxRequest = 64 << 10

// Listen creates the control socket at path (mode 0600, in a 0700
// directory). A socket left by a dead daemon is replaced; one a live daemon
// answers on is an error.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s: another vigil daemon is running", path)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		os.Remove(path)
	}
	old := unix.Umask(0o177)
	ln, err := net.Listen("unix", path)
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}

type peerKey struct{}

// ServeOption adjusts Serve.
type ServeOption func(*serveOptions)

type serveOptions struct {
	observe func(route string, code int, d time.Duration)
	drainer Drainer
}

// WithRequestObserver has Serve call observe once each request has been
// answered, with the route pattern it matched ("" for none, e.g. a peer
// refused), the reply's HTTP status and how long the answer took. Event
// streams are not observed. observe runs on the request's goroutine and
// must not block.
func WithRequestObserver(observe func(route string, code int, d time.Duration)) ServeOption {
	return func(o *serveOptions) { o.observe = observe }
}

// Serve answers requests on ln with m until ctx is done, then stops
// accepting, ends event streams, gives requests in flight up to grace to
// finish, closes ln and returns. Only root and the daemon's own user may
// connect (SO_PEERCRED); a refused peer's connection is closed. Each
// peer (uid) holds at most connlimit.PerPeer connections at once, and
// root's never wait on another user's (connlimit.Listener; a listener
// already bounded keeps its bounds). GET /v1/events streams events when
// m is also an EventSource.
func Serve(ctx context.Context, ln net.Listener, m Manager, grace time.Duration, opts ...ServeOption) error {
	var o serveOptions
	for _, opt := range opts {
		opt(&o)
	}
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	mux := newMux(m, o, streams)
	srv := &http.Server{
		Handler:           observed(checkPeer(mux), o.observe),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, peerOf(c))
		},
	}
	srv.RegisterOnShutdown(endStreams)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(connlimit.Listener(ln, connlimit.Defaults())) }()
	select {
	case err := <-errc:
		return fmt.Errorf("control server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}

// route is one route of the API: its pattern (method and path) and its
// handler. Every route is documented in docs/API.md; a test holds the two
// to each other.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// routes lists the API's routes over m. streams ends the event streams
// (the server shutting down).
func routes(m Manager, o serveOptions, streams context.Context) []route {
	return []route{
		{"GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
			st, err := m.Status(r.Context())
			if o.drainer != nil {
				st.Daemon.Drain = o.drainer.DrainState()
			}
			reply(w, st, err)
		}},
		{"POST /v1/action", func(w http.ResponseWriter, r *http.Request) {
			var req ActionRequest
			if !decode(w, r, &req) {
				return
			}
			ps, err := m.Act(asked(r), req)
			res := ActionReply{Processes: ps}
			if s, ok := m.(EventSeq); ok {
				res.Seq = s.LastSeq()
			}
			reply(w, res, err)
		}},
		{"POST /v1/signal", func(w http.ResponseWriter, r *http.Request) {
			var req SignalRequest
			if decode(w, r, &req) {
				reply(w, struct{}{}, m.Signal(asked(r), req))
			}
		}},
		{"POST /v1/reload", func(w http.ResponseWriter, r *http.Request) {
			res, err := m.Reload(asked(r))
			reply(w, res, err)
		}},
		{"GET /v1/reload/plan", func(w http.ResponseWriter, r *http.Request) {
			p, ok := m.(ReloadPlanner)
			if !ok {
				writeError(w, http.StatusNotImplemented, "a reload's plan is "+ErrNotSupported.Error())
				return
			}
			res, err := p.PlanReload(r.Context())
			reply(w, res, err)
		}},
		{"GET /v1/events", eventsHandler(m, streams)},
		{"POST /v1/drain", drainHandler(o.drainer)},
	}
}

// newMux routes the API's requests to m.
func newMux(m Manager, o serveOptions, streams context.Context) *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range routes(m, o, streams) {
		mux.HandleFunc(rt.pattern, rt.handler)
	}
	return mux
}

// asked is the context of r, a request that changes something, naming
// its peer as who asked (see WithRequester).
func asked(r *http.Request) context.Context {
	p, _ := r.Context().Value(peerKey{}).(peer)
	return WithRequester(r.Context(), p.String())
}

// peer is the credentials of a connection's other end; ok is false when
// they could not be read.
type peer struct {
	uid uint32
	pid int32
	ok  bool
}

// String names the peer for an EventAction: its uid, and the command and
// pid of the process that connected (the command as it names itself).
func (p peer) String() string {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p.pid))
	name := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(string(comm)))
	if err != nil || name == "" {
		return fmt.Sprintf("uid %d (pid %d)", p.uid, p.pid)
	}
	return fmt.Sprintf("uid %d (%s, pid %d)", p.uid, name, p.pid)
}

func peerOf(c net.Conn) peer {
	uc, ok := c.(syscall.Conn) // a *net.UnixConn, inside connlimit's wrapper
	if !ok {
		return peer{}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peer{}
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return peer{}
	}
	return peer{uid: cred.Uid, pid: cred.Pid, ok: true}
}

func checkPeer(next http.Handler) http.Handler {
	self := uint32(os.Getuid())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := r.Context().Value(peerKey{}).(peer)
		if !p.ok || (p.uid != 0 && p.uid != self) {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusForbidden, fmt.Sprintf("permission denied: uid %d may not use the vigil control socket", p.uid))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// observed calls observe (when set) after next has answered a request
// other than an event stream.
func observed(next http.Handler, observe func(route string, code int, d time.Duration)) http.Handler {
	if observe == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(sw, r) // the mux sets r.Pattern
		if r.Pattern != "GET /v1/events" {
			observe(r.Pattern, sw.code, time.Since(start))
		}
	})
}

// statusWriter remembers the status of a reply.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ActionReply is POST /v1/action's reply: the statuses of the processes
// the action named and, from a back end that numbers its events, the
// number of the latest event sent when the action settled (every event
// that led to these statuses has a number up to it).
type ActionReply struct {
	Processes []ProcessStatus `json:"processes"`
	Seq       uint64          `json:"seq,omitempty"`
}

type errorReply struct {
	Error string `json:"error"`
	// Body carries the normal reply alongside an error (an action's statuses).
	Body json.RawMessage `json:"body,omitempty"`
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("decode request: %v", err))
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, "decode request: trailing data")
		return false
	}
	return true
}

// errorCodes maps the package's errors to the HTTP statuses that carry
// them across the socket, both ways (the server's reply, the client's
// remoteError).
var errorCodes = [...]struct {
	err  error
	code int
}{
	{ErrConfig, http.StatusUnprocessableEntity}, // before ErrNotFound, which it also is
	{ErrNotFound, http.StatusNotFound},
	{ErrBadRequest, http.StatusBadRequest},
	{ErrFailed, http.StatusConflict},
	{ErrTimeout, http.StatusGatewayTimeout},
	{ErrNotSupported, http.StatusNotImplemented},
}

func reply(w http.ResponseWriter, v any, err error) {
	body, merr := json.Marshal(v)
	if merr != nil {
		writeError(w, http.StatusInternalServerError, merr.Error())
		return
	}
	if err != nil {
		code := http.StatusInternalServerError
		for _, k := range errorCodes {
			if errors.Is(err, k.err) {
				code = k.code
				break
			}
		}
		writeJSON(w, code, errorReply{Error: err.Error(), Body: body})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorReply{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
