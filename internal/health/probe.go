// Package health runs the probes that tell whether a supervised process is
// healthy: an HTTP request, a TCP or unix socket connection, or a command.
// A probe is a value; Check runs it once, bounded by a timeout, and reports
// the outcome with its latency. The package keeps no state between checks:
// the thresholds that turn results into decisions live in the supervisor.
package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"time"
)

// DefaultTimeout bounds a check whose timeout is zero.
const DefaultTimeout = time.Second

// Probe is one way of checking a process. Exactly one of its fields is set.
type Probe struct {
	HTTP *HTTP
	TCP  *TCP
	Unix string // path of a unix stream socket to connect to
	Exec *Exec
}

// HTTP is a request whose status (and optionally body) decides health.
type HTTP struct {
	Host      string // default 127.0.0.1
	Port      int
	Path      string // default /
	Method    string // default GET
	Headers   map[string]string
	StatusMin int    // default 200
	StatusMax int    // default 399
	Body      string // if set, the response body must contain it
}

// TCP is a connection attempt.
type TCP struct {
	Host string // default 127.0.0.1
	Port int
}

// Exec is a command: exit status 0 means healthy.
type Exec struct {
	Argv []string
	Env  []string // the process's environment; nil inherits the daemon's
	Dir  string
	// Start, if set, starts the command at each check, inside the
	// process's confinement; Path may be a bare name for it to look up.
	// Without it the command starts as it is.
	Start func(*exec.Cmd) error
}

// Result is the outcome of one check.
type Result struct {
	OK      bool
	Latency time.Duration
	Message string // why it failed, or a short note on success
	At      time.Time
}

// Check runs the probe once. It returns within timeout (DefaultTimeout when
// zero) even if the target hangs, and never panics on a malformed probe.
func (p Probe) Check(ctx context.Context, timeout time.Duration) Result {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	msg, err := p.run(ctx)
	r := Result{OK: err == nil, Latency: time.Since(start), Message: msg, At: start}
	if err != nil {
		r.Message = err.Error()
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.Message = fmt.Sprintf("timed out after %v: %v", timeout, err)
		}
	}
	return r
}

func (p Probe) run(ctx context.Context) (string, error) {
	switch {
	case p.HTTP != nil:
		return p.HTTP.check(ctx)
	case p.TCP != nil:
		return dial(ctx, "tcp", net.JoinHostPort(hostOr(p.TCP.Host), strconv.Itoa(p.TCP.Port)))
	case p.Unix != "":
		return dial(ctx, "unix", p.Unix)
	case p.Exec != nil:
		return p.Exec.check(ctx)
	}
	return "", errors.New("probe has no check")
}

func hostOr(h string) string {
	if h == "" {
		return "127.0.0.1"
	}
	return h
}

func dial(ctx context.Context, network, addr string) (string, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", addr, err)
	}
	_ = c.Close()
	return "connected to " + addr, nil
}

// maxBody bounds how much of a response body is read for a body match.
const maxBody = 64 << 10

func (h *HTTP) check(ctx context.Context) (string, error) {
	path := h.Path
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	method := h.Method
	if method == "" {
		method = http.MethodGet
	}
	url := "http://" + net.JoinHostPort(hostOr(h.Host), strconv.Itoa(h.Port)) + path
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return "", fmt.Errorf("http probe: %w", err)
	}
	for k, v := range h.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	// A fresh transport per check: no pooled connection outlives the probe,
	// and redirects are not followed (their status decides, as in Kubernetes
	// only for the same host; here simply the status itself).
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	lo, hi := h.StatusMin, h.StatusMax
	if lo == 0 {
		lo = 200
	}
	if hi == 0 {
		hi = 399
	}
	if resp.StatusCode < lo || resp.StatusCode > hi {
		return "", fmt.Errorf("%s %s: status %d, want %d-%d", method, url, resp.StatusCode, lo, hi)
	}
	if h.Body != "" {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if err != nil {
			return "", fmt.Errorf("%s %s: reading body: %w", method, url, err)
		}
		if !bytes.Contains(b, []byte(h.Body)) {
			return "", fmt.Errorf("%s %s: body does not contain %q", method, url, h.Body)
		}
	}
	return "status " + strconv.Itoa(resp.StatusCode), nil
}

func (e *Exec) check(ctx context.Context) (string, error) {
	if len(e.Argv) == 0 {
		return "", errors.New("exec probe: empty argv")
	}
	cmd := exec.CommandContext(ctx, e.Argv[0], e.Argv[1:]...)
	if e.Start != nil {
		cmd.Path, cmd.Err = e.Argv[0], nil // looked up where it runs, not here
	}
	var out bytes.Buffer
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = e.Env, e.Dir, &out, &out
	cmd.WaitDelay = 100 * time.Millisecond // a child holding the pipes open cannot stretch the timeout
	err := e.start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", e.Argv[0], err, bytes.TrimSpace(trim(out.Bytes())))
	}
	return string(bytes.TrimSpace(trim(out.Bytes()))), nil
}

func (e *Exec) start(cmd *exec.Cmd) error {
	if e.Start != nil {
		return e.Start(cmd)
	}
	return cmd.Start()
}

func trim(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}
