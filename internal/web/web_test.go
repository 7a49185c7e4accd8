package web

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// TestEveryRouteNeedsCredentials: without credentials, or with a wrong
// user or password, every route answers 401 with a challenge and nothing
// behind it runs.
func TestEveryRouteNeedsCredentials(t *testing.T) {
	fb, l := newFake(t)
	var acted, metricsServed atomic.Bool // set by handlers, read here
	fb.act = func(context.Context, control.ActionRequest) error { acted.Store(true); return nil }
	_, ts := serve(t, fb, l, func(c *Config) {
		c.Metrics = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { metricsServed.Store(true) })
	})
	form := "action=stop&job=app&process=server&csrf=x"
	routes := []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/events"}, {"GET", "/logs/app/server"}, {"GET", "/logs/app/server/stream"}, {"GET", "/metrics"},
		{"GET", "/v1/status"}, {"GET", "/v1/history"},
		{"GET", "/static/app.js"}, {"GET", "/nothing"}, {"POST", "/action"},
	}
	creds := []struct {
		name       string
		user, pass string
		set        bool
	}{
		{"none", "", "", false},
		{"wrong password", testUser, "s3cret", true},
		{"wrong user", "root", testPassword, true},
		{"empty", "", "", true},
	}
	for _, rt := range routes {
		for _, c := range creds {
			var body io.Reader
			if rt.method == "POST" {
				body = strings.NewReader(form)
			}
			req, _ := http.NewRequestWithContext(t.Context(), rt.method, ts.URL+rt.path, body)
			if c.set {
				req.SetBasicAuth(c.user, c.pass)
			}
			res, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s %s with %s credentials: %s, challenge %q", rt.method, rt.path, c.name, res.Status, res.Header.Get("WWW-Authenticate"))
			}
		}
	}
	if acted.Load() || metricsServed.Load() {
		t.Fatalf("reached without credentials: acted %v, metrics %v", acted.Load(), metricsServed.Load())
	}
	if code, _ := request(t, ts, "GET", "/metrics", nil, true); code != http.StatusOK || !metricsServed.Load() {
		t.Fatalf("metrics with credentials: %d", code)
	}
	if code, page := request(t, ts, "GET", "/", nil, true); code != http.StatusOK || !strings.Contains(page, `data-process="server"`) {
		t.Fatalf("page with credentials: %d\n%s", code, page)
	}
}

// TestActionsRefusedAcrossSites: an action without this server's token,
// from a foreign origin, or by GET is refused and the process keeps
// running untouched; the same action done right stops it.
func TestActionsRefusedAcrossSites(t *testing.T) {
	ld := startDaemon(t)
	_, ts := serve(t, ld.d, ld.layout)
	tok := token(t, ts)
	before := ld.process(t, "app", "server")
	if before.State != "running" {
		t.Fatalf("before: %+v", before)
	}
	form := func(tok string) string {
		return url.Values{"action": {"stop"}, "job": {"app"}, "process": {"server"}, "csrf": {tok}}.Encode()
	}
	refused := []struct {
		name   string
		method string
		path   string
		body   string
		header []string
		want   int
	}{
		{"no token", "POST", "/action", "action=stop&job=app&process=server", nil, http.StatusForbidden},
		{"wrong token", "POST", "/action", form("AAAA" + tok[4:]), nil, http.StatusForbidden},
		{"foreign origin", "POST", "/action", form(tok), []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"cross-site fetch", "POST", "/action", form(tok), []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"same-site, other origin", "POST", "/action", form(tok), []string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"GET", "GET", "/action?" + form(tok), "", nil, http.StatusMethodNotAllowed},
		{"GET on the page", "GET", "/?" + form(tok), "", nil, http.StatusOK},
		{"GET on the logs", "GET", "/logs/app/server?" + form(tok), "", nil, http.StatusOK},
	}
	for _, r := range refused {
		var body io.Reader
		if r.body != "" {
			body = strings.NewReader(r.body)
		}
		if code, out := request(t, ts, r.method, r.path, body, true, r.header...); code != r.want {
			t.Errorf("%s: %d, want %d\n%s", r.name, code, r.want, out)
		}
	}
	if after := ld.process(t, "app", "server"); after.State != "running" || after.PID != before.PID || after.Restarts != before.Restarts {
		t.Fatalf("refused requests touched the process: before %+v\nafter %+v", before, after)
	}
	code, out := request(t, ts, "POST", "/action", strings.NewReader(form(tok)), true,
		"Origin", ts.URL, "Sec-Fetch-Site", "same-origin", "Accept", "application/json")
	if code != http.StatusOK || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("same-origin action: %d %s", code, out)
	}
	if st := ld.process(t, "app", "server"); st.State != "stopped" {
		t.Fatalf("after a good stop: %+v", st)
	}
}

// TestEventsFollowChanges: the event stream sends the status at once and
// again after a process changes.
func TestEventsFollowChanges(t *testing.T) {
	ld := startDaemon(t)
	// No periodic refresh within the test: only the change can bring the
	// stopped status.
	_, ts := serve(t, ld.d, ld.layout, func(c *Config) { c.Refresh = time.Hour })
	es := openEvents(t, ts)
	running := `data-process="server" data-state="running"`
	es.waitEvent(t, "the first status", func(d string) bool { return strings.Contains(d, running) })
	if _, err := ld.d.Act(t.Context(), control.ActionRequest{Action: "stop", Job: "app", Process: "server"}); err != nil {
		t.Fatal(err)
	}
	data := es.waitEvent(t, "the stop", func(d string) bool {
		return strings.Contains(d, `data-process="server" data-state="stopped"`)
	})
	for _, want := range []string{`data-process="a" data-state="running"`, "broken", `class="problem error"`} {
		if !strings.Contains(data, want) {
			t.Errorf("status event lacks %q:\n%s", want, data)
		}
	}
}

// TestEventStreamsEndWithTheServer: Serve returns once its context ends,
// though an event stream is open, and the stream then ends.
func TestEventStreamsEndWithTheServer(t *testing.T) {
	fb, l := newFake(t)
	s, err := New(Config{Backend: fb, Layout: l, Credentials: []Credential{{testUser, testPassword}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+ln.Addr().String()+"/events", nil)
	req.SetBasicAuth(testUser, testPassword)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	es := &eventStream{r: bufio.NewReader(res.Body)}
	if name, _, err := es.next(); err != nil || name != "status" {
		t.Fatalf("first event %q: %v", name, err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := es.next(); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("stream ended with %v", err)
			}
			break
		}
	}
}

// TestActionIsBounded: an action that does not settle within ActionTimeout
// is answered (504) rather than waited for.
func TestActionIsBounded(t *testing.T) {
	fb, l := newFake(t)
	fb.act = func(ctx context.Context, _ control.ActionRequest) error { <-ctx.Done(); return ctx.Err() }
	_, ts := serve(t, fb, l, func(c *Config) { c.ActionTimeout = time.Millisecond })
	body := url.Values{"action": {"restart"}, "job": {"app"}, "csrf": {token(t, ts)}}.Encode()
	code, out := request(t, ts, "POST", "/action", strings.NewReader(body), true, "Accept", "application/json")
	if code != http.StatusGatewayTimeout || !strings.Contains(out, "restart app: not settled") {
		t.Fatalf("%d %s", code, out)
	}
	// Without JavaScript the answer is the page with the message.
	code, out = request(t, ts, "POST", "/action", strings.NewReader(body), true)
	if code != http.StatusGatewayTimeout || !strings.Contains(out, `class="message fail"`) || !strings.Contains(out, "<table") {
		t.Fatalf("%d %s", code, out)
	}
	tok := token(t, ts)
	for name, body := range map[string]string{
		"unknown action": url.Values{"action": {"signal"}, "job": {"app"}, "csrf": {tok}}.Encode(),
		"bad job":        url.Values{"action": {"stop"}, "job": {".."}, "csrf": {tok}}.Encode(),
		"bad process":    url.Values{"action": {"stop"}, "job": {"app"}, "process": {"a/b"}, "csrf": {tok}}.Encode(),
		"huge body":      url.Values{"action": {"stop"}, "job": {"app"}, "csrf": {tok}, "pad": {strings.Repeat("x", 8<<10)}}.Encode(),
	} {
		if code, out := request(t, ts, "POST", "/action", strings.NewReader(body), true); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, code, out)
		}
	}
}

// TestLogTail: the log view escapes what processes wrote, refuses names
// that are not single path elements, and shows only supervised processes.
func TestLogTail(t *testing.T) {
	fb, l := newFake(t)
	_, ts := serve(t, fb, l)
	writeFile(t, l.StdoutLog("app", "server"), "hello\n<script>alert(1)</script>\n")
	writeFile(t, l.StderrLog("app", "server"), "oops & \"quotes\"\n")
	code, page := request(t, ts, "GET", "/logs/app/server", nil, true)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, page)
	}
	for _, want := range []string{"hello", "&lt;script&gt;alert(1)&lt;/script&gt;", "oops &amp; &#34;quotes&#34;"} {
		if !strings.Contains(page, want) {
			t.Errorf("log view lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Fatalf("log view carries the process's markup:\n%s", page)
	}
	if code, page := request(t, ts, "GET", "/logs/app/server?n=1", nil, true); code != http.StatusOK || strings.Contains(page, "hello") {
		t.Fatalf("n=1: %d\n%s", code, page)
	}
	for path, want := range map[string]int{
		"/logs/%2E%2E/server":            http.StatusBadRequest,
		"/logs/app%2F..%2F..%2Fetc/pass": http.StatusBadRequest,
		"/logs/app/..%2F..%2Fetc%2Fpass": http.StatusBadRequest,
		"/logs/app/other":                http.StatusNotFound,
		"/logs/app/server?n=x":           http.StatusBadRequest,
	} {
		if code, out := request(t, ts, "GET", path, nil, true); code != want {
			t.Errorf("%s: %d, want %d\n%s", path, code, want, out)
		}
	}
}

// TestListenRefusesRemote: only loopback addresses are served unless
// remote access is asked for.
func TestListenRefusesRemote(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:80", "nonsense"} {
		ln, err := Listen(addr, false)
		if err == nil {
			ln.Close()
			t.Errorf("%s: listened", addr)
		} else if addr != "nonsense" && !strings.Contains(err.Error(), "--http-allow-remote") {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := Listen(addr, false)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		ln.Close()
	}
}
