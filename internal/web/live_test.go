package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/history"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestStatusAndHistoryJSON: GET /v1/status is the control API's status,
// GET /v1/history the history's series over a span; both behind the
// page's credentials, a bad span refused, and no history said plainly.
func TestStatusAndHistoryJSON(t *testing.T) {
	fb, l := newFake(t)
	hist := history.New(history.Config{})
	hist.Record(fb.st, time.Now())
	_, ts := serve(t, fb, l, func(c *Config) { c.History = hist })
	for _, path := range []string{"/v1/status", "/v1/history"} {
		if code, _ := request(t, ts, "GET", path, nil, false); code != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d", path, code)
		}
	}
	code, body := request(t, ts, "GET", "/v1/status", nil, true)
	var st control.Status
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil || st.Processes[0].PID != 42 {
		t.Fatalf("status %d %v: %s", code, err, body)
	}
	code, body = request(t, ts, "GET", "/v1/history?span=15m&job=app", nil, true)
	var h historyReply
	if err := json.Unmarshal([]byte(body), &h); code != http.StatusOK || err != nil || h.Step != 10 ||
		len(h.Series) != 1 || h.Series[0].Process != "server" || len(h.Series[0].T) != 1 || h.Series[0].RSS[0] != 5<<20 {
		t.Fatalf("history %d %v: %s", code, err, body)
	}
	if code, _ := request(t, ts, "GET", "/v1/history?span=forever", nil, true); code != http.StatusBadRequest {
		t.Errorf("bad span: %d", code)
	}
	_, bare := serve(t, fb, l)
	if code, body := request(t, bare, "GET", "/v1/history", nil, true); code != http.StatusNotFound || !strings.Contains(body, "no history") {
		t.Errorf("without a history: %d %s", code, body)
	}
}

// TestStreamCarriesTimelineAndSamples: the page's one stream sends the
// status, then the recent events as timeline entries (escaped, the exit
// that ends a stop drawn as an operator's, a kill, an OOM kill and an
// escalation of the stop ladder as problems, an action as an operator's),
// then a sample of every process each time the history records.
func TestStreamCarriesTimelineAndSamples(t *testing.T) {
	fb, l := newFake(t)
	fb.events = []control.Event{
		{Seq: 1, Kind: control.EventStarted, Job: "app", Process: "server", PID: 42, Time: time.Now()},
		{Seq: 2, Kind: control.EventExited, Job: "app", Process: "server", Exit: &control.Exit{Description: "killed by <b>"}},
		{Seq: 3, Kind: control.EventStopping, Job: "app", Process: "server"},
		{Seq: 4, Kind: control.EventExited, Job: "app", Process: "server", Exit: &control.Exit{Description: "exited with code 0"}},
		{Seq: 5, Kind: control.EventOOMKilled, Job: "app", Process: "server", Exit: &control.Exit{Description: "killed by the OOM killer"}},
		{Seq: 6, Kind: "escalated", Job: "app", Process: "server", Message: "SIGQUIT after 15s (quit)"},
		{Seq: 7, Kind: control.EventAction, Job: "app", Message: "stop, asked by page user admin from 127.0.0.1"},
	}
	hist := history.New(history.Config{})
	_, ts := serve(t, fb, l, func(c *Config) { c.History = hist; c.Refresh = time.Hour })
	es := openEvents(t, ts)
	want := []string{`status`,
		`event|<li class="ev ev-info kind-started" data-seq="1" data-job="app" data-kind="started"`,
		`event|<li class="ev ev-problem kind-exited" data-seq="2"`,
		`event|<li class="ev ev-operator kind-stopping" data-seq="3"`,
		`event|<li class="ev ev-operator kind-exited" data-seq="4"`,
		`event|<li class="ev ev-problem kind-oom-killed" data-seq="5"`,
		`event|<li class="ev ev-problem kind-escalated" data-seq="6"`,
		`event|<li class="ev ev-operator kind-action" data-seq="7" data-job="app"`}
	for i, w := range want {
		name, data, err := es.next()
		if err != nil {
			t.Fatal(err)
		}
		kind, prefix, _ := strings.Cut(w, "|")
		if name != kind || !strings.HasPrefix(data, prefix) {
			t.Fatalf("event %d: %s %s, want %s %s", i, name, data, kind, prefix)
		}
		if i == 2 && !strings.Contains(data, "killed by &lt;b&gt;") {
			t.Fatalf("entry not escaped: %s", data)
		}
	}
	hist.Record(fb.st, time.Now())
	_, data := es.waitNamed(t, "samples")
	var h historyReply
	if err := json.Unmarshal([]byte(data), &h); err != nil || len(h.Series) != 1 || len(h.Series[0].T) != 1 {
		t.Fatalf("samples %v: %s", err, data)
	}
}

// waitNamed reads events until one named name comes.
func (es *eventStream) waitNamed(t *testing.T, name string) (string, string) {
	t.Helper()
	for {
		n, data, err := es.next()
		if err != nil {
			t.Fatalf("waiting for %s: %v", name, err)
		}
		if n == name {
			return n, data
		}
	}
}

// TestStreamsAreCapped: with every stream slot taken, one more stream (a
// status page's or a log view's) is answered 503 with a Retry-After at
// once, while the page itself and actions are still served; a slot given
// back is taken again.
func TestStreamsAreCapped(t *testing.T) {
	fb, l := newFake(t)
	writeFile(t, l.StdoutLog("app", "server"), "x\n")
	s, ts := serve(t, fb, l, func(c *Config) { c.MaxStreams = 2 })
	ended := make(chan struct{}, 2)
	s.streamEnded = func() { ended <- struct{}{} }
	ctx, cancel := context.WithCancel(t.Context())
	openStream(t, ctx, ts, "/events")
	openStream(t, t.Context(), ts, "/logs/app/server/stream")
	for _, path := range []string{"/events", "/logs/app/server/stream"} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", ts.URL+path, nil)
		req.SetBasicAuth(testUser, testPassword)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "10" ||
			!strings.Contains(string(body), "too many live views") {
			t.Errorf("%s with every slot taken: %s %v %s", path, res.Status, res.Header, body)
		}
	}
	if code, _ := request(t, ts, "GET", "/", nil, true); code != http.StatusOK {
		t.Fatalf("the page with every slot taken: %d", code)
	}
	cancel() // the status page goes: its slot comes back
	select {
	case <-ended:
	case <-time.After(testproc.Guard): // failure guard
		t.Fatal("the stream of a client that left never ended")
	}
	openStream(t, t.Context(), ts, "/events")
}

// openStream opens a stream and returns its reader once it has answered.
func openStream(t *testing.T, ctx context.Context, ts *httptest.Server, path string) *bufio.Reader {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	req.SetBasicAuth(testUser, testPassword)
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", path, res.Status)
	}
	return bufio.NewReader(res.Body)
}

// TestStreamsLeaveConnections: with every stream slot of a server on its
// real listener taken, a page, an action's answer and a scrape still get
// a connection (the listener's cap is four times the streams').
func TestStreamsLeaveConnections(t *testing.T) {
	fb, l := newFake(t)
	s, err := New(Config{Backend: fb, Layout: l, Credentials: []Credential{{testUser, testPassword}},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up 1\n") })})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	serving, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(serving, ln) }()
	defer func() { stop(); <-served }()
	ctx, cancel := context.WithTimeout(t.Context(), testproc.Guard) // failure guard: a request left waiting for a connection
	defer cancel()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, DisableKeepAlives: true}}
	get := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		req.SetBasicAuth(testUser, testPassword)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for range defaultMaxStreams {
		res := get("/events")
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("stream: %s", res.Status)
		}
	}
	if res := get("/events"); res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("one stream too many: %s", res.Status)
	}
	for _, path := range []string{"/", "/metrics", "/v1/status"} {
		res := get(path)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s with every stream slot taken: %s", path, res.Status)
		}
	}
}
