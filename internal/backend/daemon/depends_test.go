package daemon

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// writeServe writes a job with one "serve" process named name and extra
// process-level YAML.
func (h *harness) writeServe(job, name, extra string) { h.writeOne(job, name, "serve", extra) }

// TestDependencyOrder: web depends on db/pg being healthy: it starts only
// after pg's readiness probe passed, and stops before pg.
func TestDependencyOrder(t *testing.T) {
	var mu sync.Mutex
	var firstProbe time.Time
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if firstProbe.IsZero() {
			firstProbe = time.Now()
		}
	})}
	go srv.Serve(l)
	defer srv.Close()
	h := newHarness(t)
	h.writeServe("db", "pg", fmt.Sprintf("  health:\n    readiness: {http: {port: %d}, period: 50ms, initial_delay: 100ms}\n",
		l.Addr().(*net.TCPAddr).Port))
	h.writeServe("aweb", "app", "  depends_on: [{job: db, process: pg, condition: healthy}]\n")
	h.start(supervise.Timing{})
	pg, app := h.status("db", "pg"), h.status("aweb", "app")
	mu.Lock()
	ready := firstProbe
	mu.Unlock()
	if pg.State != "running" || app.State != "running" || ready.IsZero() || !app.Since.After(ready.Add(-time.Millisecond)) ||
		!pg.Since.Before(app.Since) {
		t.Fatalf("start order: pg %s since %v, app %s since %v, pg ready at %v", pg.State, pg.Since, app.State, app.Since, ready)
	}
	h.rep.Expect(t, "ready") // both have their signal handlers
	h.rep.Expect(t, "ready")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if first := h.rep.Expect(t, "signal TERM"); first.PID != app.ExecPID {
		t.Fatalf("first stopped: pid %d, want app %d (pg %d)", first.PID, app.ExecPID, pg.ExecPID)
	}
}

// TestDependencyCycle: a cycle is an error naming the file, line and field.
func TestDependencyCycle(t *testing.T) {
	h := newHarness(t)
	h.writeServe("a", "x", "  depends_on:\n  - {job: b, process: y}\n")
	h.writeServe("b", "y", "  depends_on:\n  - {job: a, process: x}\n")
	h.start(supervise.Timing{})
	st, err := h.c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range st.Problems {
		if p.Severity == "error" && strings.Contains(p.Message, "dependency cycle") {
			found = true
			if p.Field != "processes[0].depends_on[0]" || p.Line != 9 || !strings.HasSuffix(p.File, "bpm.yml") {
				t.Errorf("cycle problem at %s:%d %s", p.File, p.Line, p.Field)
			}
		}
	}
	if !found {
		t.Fatalf("no cycle error in %+v", st.Problems)
	}
}
