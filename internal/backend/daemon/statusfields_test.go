package daemon

import (
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestStatusCarriesRetryAndMemoryLimit: over the control API, a process
// backing off after quick exits says when it starts again (in the future,
// within the backoff's delay), and a process's limits.memory is in its
// status as bytes.
func TestStatusCarriesRetryAndMemoryLimit(t *testing.T) {
	h := newHarness(t)
	h.writeOne("crash", "loop", "exit", "  limits: {memory: 64M}\n", testproc.EnvCode+"=3")
	h.writeJob("calm", pr{"p", "serve", nil})
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	var st control.ProcessStatus
	h.waitFor("a backoff", func() bool {
		st = h.status("crash", "loop")
		return st.State == "backoff"
	})
	if st.RetryAt.IsZero() || st.RetryAt.After(time.Now().Add(time.Minute)) {
		t.Fatalf("backoff retry at %v", st.RetryAt)
	}
	if st.MemoryLimitBytes != 64<<20 {
		t.Fatalf("memory limit %d, want %d", st.MemoryLimitBytes, 64<<20)
	}
	if calm := h.status("calm", "p"); calm.MemoryLimitBytes != 0 || !calm.RetryAt.IsZero() {
		t.Fatalf("calm process: limit %d, retry at %v", calm.MemoryLimitBytes, calm.RetryAt)
	}
}
