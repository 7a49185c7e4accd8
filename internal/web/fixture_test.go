package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/daemon"
	"github.com/vigil-bosh/vigil/internal/history"
	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

func TestMain(m *testing.M) {
	testproc.Main()
	os.Exit(m.Run())
}

const testUser, testPassword = "admin", "s3cret:with:colons"

// liveDaemon is a real daemon, isolation off, supervising the test binary
// as app/server (a "serve" child) and worker/{a,b}, beside a job whose
// bpm.yml is invalid, and any more jobs asked for.
type liveDaemon struct {
	d      *daemon.Daemon
	layout boshpath.Layout
	rep    *testproc.Listener
}

func startDaemon(t *testing.T, more ...moreJob) *liveDaemon {
	t.Helper()
	r := testroot.New(t, "")
	l := r.Layout
	ld := &liveDaemon{layout: l, rep: r.Rep}
	r.Job("app", testroot.Proc{Name: "server", Behaviour: "serve"})
	r.Job("worker", testroot.Proc{Name: "a", Behaviour: "serve"}, testroot.Proc{Name: "b", Behaviour: "serve"})
	serving := 3
	for _, j := range more {
		r.Job(j.name, j.procs...)
		serving += len(j.procs)
	}
	r.Config("broken", "processes:\n- name: x\n  executable: 7\n  limits: {memory: lots}\n")
	d, err := daemon.New(daemon.Config{Layout: l, Init: r.Self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay},
		NoIsolation: true, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	select {
	case <-d.Ready():
	case err := <-done:
		t.Fatalf("daemon ended early: %v", err)
	}
	ld.d = d
	for range serving {
		ld.rep.Expect(t, "ready") // every child has its signal handlers
	}
	return ld
}

// moreJob is a job startDaemon adds, whose processes all serve.
type moreJob struct {
	name  string
	procs []testroot.Proc
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// process returns the daemon's status of job/proc.
func (ld *liveDaemon) process(t *testing.T, job, proc string) control.ProcessStatus {
	t.Helper()
	st, err := ld.d.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Processes {
		if p.Job == job && p.Process == proc {
			return p
		}
	}
	t.Fatalf("no %s/%s in %+v", job, proc, st.Processes)
	return control.ProcessStatus{}
}

// serve serves a web.Server for b on a loopback httptest server. Its event
// streams end before the test server closes.
func serve(t *testing.T, b Backend, l boshpath.Layout, mod ...func(*Config)) (*Server, *httptest.Server) {
	t.Helper()
	cfg := Config{Backend: b, Layout: l, Credentials: []Credential{{User: testUser, Password: testPassword}}}
	for _, m := range mod {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close) // runs first: the streams end, so Close does not wait on them
	return s, ts
}

// request sends method path with the test credentials (when auth) and
// returns the status code and body.
func request(t *testing.T, ts *httptest.Server, method, path string, body io.Reader, auth bool, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.SetBasicAuth(testUser, testPassword)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var tokenRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token reads the CSRF token from the page.
func token(t *testing.T, ts *httptest.Server) string {
	t.Helper()
	code, page := request(t, ts, "GET", "/", nil, true)
	m := tokenRE.FindStringSubmatch(page)
	if code != http.StatusOK || m == nil {
		t.Fatalf("page %d without a token:\n%s", code, page)
	}
	return m[1]
}

// eventStream reads server-sent events from /events.
type eventStream struct {
	r    *bufio.Reader
	body io.Closer
}

func openEvents(t *testing.T, ts *httptest.Server) *eventStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*testproc.Guard) // failure guard
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/events", nil)
	req.SetBasicAuth(testUser, testPassword)
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %s %s", res.Status, res.Header.Get("Content-Type"))
	}
	return &eventStream{r: bufio.NewReader(res.Body), body: res.Body}
}

// next returns the next event's name and data (its data lines joined),
// or io.EOF once the stream has ended.
func (es *eventStream) next() (string, string, error) {
	var name string
	var data []string
	for {
		line, err := es.r.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && (name != "" || data != nil):
			return name, strings.Join(data, "\n"), nil
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}

// waitEvent reads events until one's data satisfies cond.
func (es *eventStream) waitEvent(t *testing.T, what string, cond func(string) bool) string {
	t.Helper()
	for {
		_, data, err := es.next()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if cond(data) {
			return data
		}
	}
}

// fakeBackend serves a fixed status and past events; Act runs act when
// set.
type fakeBackend struct {
	st      control.Status
	act     func(ctx context.Context, req control.ActionRequest) error
	changes chan struct{}
	events  []control.Event
}

func (f *fakeBackend) Events(ctx context.Context, recent int) (<-chan control.Event, error) {
	ch := make(chan control.Event, len(f.events))
	for _, ev := range f.events[len(f.events)-min(recent, len(f.events)):] {
		ch <- ev
	}
	context.AfterFunc(ctx, func() { close(ch) })
	return ch, nil
}

func (f *fakeBackend) Status(context.Context) (control.Status, error) { return f.st, nil }

func (f *fakeBackend) Act(ctx context.Context, req control.ActionRequest) ([]control.ProcessStatus, error) {
	if f.act == nil {
		return nil, fmt.Errorf("fake: no action expected, got %+v", req)
	}
	return nil, f.act(ctx, req)
}

func (f *fakeBackend) Changes() <-chan struct{} { return f.changes }

func newFake(t *testing.T) (*fakeBackend, boshpath.Layout) {
	l, _ := boshpath.New(t.TempDir())
	return &fakeBackend{changes: make(chan struct{}), st: control.Status{
		Daemon: control.DaemonInfo{PID: 1, Version: "test", Root: l.Root(), Backend: "native", Started: time.Now()},
		Processes: []control.ProcessStatus{{Job: "app", Process: "server", State: "running", PID: 42, Since: time.Now(),
			Usage: &control.Usage{RSSBytes: 5 << 20, CPUSeconds: 1.5}}},
	}}, l
}

// recordHistory runs a history of ld's daemon that takes a point every
// second, until the test ends.
func (ld *liveDaemon) recordHistory(t *testing.T) *history.Store {
	hist := history.New(history.Config{Step: time.Second})
	ctx, stop := context.WithCancel(context.Background())
	recorded := make(chan struct{})
	go func() { hist.Run(ctx, ld.d); close(recorded) }()
	t.Cleanup(func() { stop(); <-recorded })
	return hist
}
