package daemon

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// switchServer is a real HTTP server whose /healthz answers 200 until told
// to fail, and counts the failures it answered.
type switchServer struct {
	mu     sync.Mutex
	sick   bool
	failed int
	port   int
}

func newSwitchServer(t *testing.T) *switchServer {
	s := &switchServer{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.sick {
			s.failed++
			w.WriteHeader(http.StatusInternalServerError)
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *switchServer) set(sick bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sick = sick
	return s.failed
}

// writeProbed writes a job with one "serve" process and extra
// process-level YAML (health, restart...).
func (h *harness) writeProbed(job, extra string) { h.writeOne(job, "server", "serve", extra) }

// TestLivenessRestartsAfterThreshold: a real HTTP liveness probe that fails
// restarts the process after exactly failure_threshold failures, while a
// failing readiness probe only marks it not ready.
func TestLivenessRestartsAfterThreshold(t *testing.T) {
	live, ready := newSwitchServer(t), newSwitchServer(t)
	h := newHarness(t)
	h.writeProbed("web", fmt.Sprintf(`  health:
    liveness: {http: {port: %d, path: /healthz}, period: 50ms, timeout: 1s, failure_threshold: 3}
    readiness: {http: {port: %d}, period: 50ms, failure_threshold: 1}
`, live.port, ready.port))
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	h.waitFor("healthy and ready", func() bool {
		st := h.status("web", "server")
		return st.Health == "healthy" && st.Ready && len(st.Probes) == 2
	})
	for _, p := range h.status("web", "server").Probes { // kept with latencies, through the JSON API
		if !p.OK || p.LatencyMS <= 0 || p.At.IsZero() || (p.Role != "liveness" && p.Role != "readiness") {
			t.Fatalf("probe result %+v", p)
		}
	}
	ready.set(true)
	h.waitFor("not ready", func() bool { return !h.status("web", "server").Ready })
	if st := h.status("web", "server"); st.Restarts != 0 || st.ExecPID != first.PID {
		t.Fatalf("readiness failure restarted: %+v", st)
	}
	ready.set(false)
	h.waitFor("ready again", func() bool { return h.status("web", "server").Ready })

	live.set(true)
	h.rep.Expect(t, "signal TERM") // the normal stop ladder
	if n := live.set(false); n != 3 {
		t.Fatalf("restarted after %d failures, want 3", n)
	}
	second := h.rep.Expect(t, "ready")
	if second.PID == first.PID {
		t.Fatal("no new process")
	}
	h.waitFor("the restart to show", func() bool {
		st := h.status("web", "server")
		return st.ExecPID == second.PID && st.Restarts == 1 && st.Health == "healthy"
	})
}

// TestStartupHoldsOffLiveness: while the startup probe fails, a failing
// liveness probe is not even run; once it passes, liveness restarts.
func TestStartupHoldsOffLiveness(t *testing.T) {
	live := newSwitchServer(t)
	live.set(true)
	h := newHarness(t)
	sock := filepath.Join(h.layout.Root(), "startup.sock")
	h.writeProbed("web", fmt.Sprintf(`  health:
    startup: {unix: %s, period: 20ms, failure_threshold: 1000}
    liveness: {http: {port: %d}, period: 20ms, failure_threshold: 1}
`, sock, live.port))
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	h.waitFor("startup failures", func() bool {
		st := h.status("web", "server")
		return len(st.Probes) == 1 && st.Probes[0].Failures >= 5
	})
	if st := h.status("web", "server"); st.Health != "starting" || st.Ready || st.Restarts != 0 || st.Probes[0].Role != "startup" {
		t.Fatalf("during startup: %+v", st)
	}
	l, err := net.Listen("unix", sock) // the startup probe passes from now on
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h.rep.Expect(t, "signal TERM")
	live.set(false)
}
