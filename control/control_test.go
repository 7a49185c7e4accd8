package control

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/connlimit/connlimittest"
)

// fakeManager answers from fixed values and records requests.
type fakeManager struct {
	acts    chan ActionRequest
	hold    chan struct{} // if set, Act answers once it is closed
	actErr  error
	signals []SignalRequest
}

func (f *fakeManager) Status(context.Context) (Status, error) {
	return Status{Daemon: DaemonInfo{PID: 7}, Processes: []ProcessStatus{{Job: "j", Process: "p", State: "running"}}}, nil
}

func (f *fakeManager) Act(_ context.Context, req ActionRequest) ([]ProcessStatus, error) {
	if f.acts != nil {
		f.acts <- req
	}
	if f.hold != nil {
		<-f.hold
	}
	return []ProcessStatus{{Job: req.Job, Process: "p", State: "backoff"}}, f.actErr
}

func (f *fakeManager) Signal(_ context.Context, req SignalRequest) error {
	f.signals = append(f.signals, req)
	if req.Process == "missing" {
		return fmt.Errorf("process %s/%s: %w", req.Job, req.Process, ErrNotFound)
	}
	return nil
}

func (f *fakeManager) Reload(context.Context) (ReloadResult, error) {
	return ReloadResult{Started: []string{"j/new"}}, nil
}

func serve(t *testing.T, m Manager, opts ...ServeOption) (string, *Client) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run", "vigil.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, m, time.Second, opts...) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		os.RemoveAll(dir)
	})
	return path, NewClient(path)
}

func TestRoundTrip(t *testing.T) {
	m := &fakeManager{actErr: fmt.Errorf("j/p: exited with code 1: %w", ErrFailed)}
	path, c := serve(t, m)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v (%v)", fi.Mode(), err)
	}
	st, err := c.Status(t.Context())
	if err != nil || st.Daemon.PID != 7 || st.Processes[0].State != "running" {
		t.Fatalf("status %+v %v", st, err)
	}
	ps, err := c.Act(t.Context(), ActionRequest{Action: ActionStart, Job: "j"})
	if !errors.Is(err, ErrFailed) || err.Error() != "j/p: exited with code 1: action failed" {
		t.Fatalf("act error %v", err)
	}
	if len(ps) != 1 || ps[0].State != "backoff" {
		t.Fatalf("statuses not carried with the error: %+v", ps)
	}
	if err := c.Signal(t.Context(), SignalRequest{Job: "j", Process: "missing", Signal: "HUP"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("signal error %v", err)
	}
	res, err := c.Reload(t.Context())
	if err != nil || res.Started[0] != "j/new" {
		t.Fatalf("reload %+v %v", res, err)
	}
}

// TestCancelledCall: a call whose context ends while the daemon works on
// it returns the context's error at once, and the daemon finishes anyway.
func TestCancelledCall(t *testing.T) {
	m := &fakeManager{acts: make(chan ActionRequest, 1), hold: make(chan struct{})}
	_, c := serve(t, m)
	defer close(m.hold)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Act(ctx, ActionRequest{Action: ActionStart, Job: "j"})
		done <- err
	}()
	<-m.acts // the daemon has the request and holds its answer
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", err)
	}
}

func TestBadRequests(t *testing.T) {
	path, _ := serve(t, &fakeManager{})
	c := NewClient(path)
	for _, body := range []string{`{"action":"start","job":"j","extra":1}`, `{"action":`, `{} {}`} {
		resp, err := c.do(t.Context(), http.MethodPost, "/v1/action", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d", body, resp.StatusCode)
		}
	}
	big := `{"action":"start","job":"` + strings.Repeat("x", maxRequest) + `"}`
	resp, err := c.do(t.Context(), http.MethodPost, "/v1/action", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("oversized request: status %d", resp.StatusCode)
	}
}

func TestNoDaemon(t *testing.T) {
	c := NewClient(filepath.Join(t.TempDir(), "none.sock"))
	if _, err := c.Status(t.Context()); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("got %v", err)
	}
}

func TestListenRefusesALiveDaemonAndReplacesAStaleSocket(t *testing.T) {
	path, _ := serve(t, &fakeManager{})
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another vigil daemon") {
		t.Fatalf("second listen: %v", err)
	}
	stale := filepath.Join(t.TempDir(), "stale.sock")
	ln, err := Listen(stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(interface{ SetUnlinkOnClose(bool) }).SetUnlinkOnClose(false)
	ln.Close() // the socket file stays, as after a crash
	ln, err = Listen(stale)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln.Close()
}

// TestOtherUsersAreRefused runs a client as another user against a socket
// whose file mode would let it in: the peer-credential check must refuse.
func TestOtherUsersAreRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	path, _ := serve(t, &fakeManager{})
	os.Chmod(filepath.Dir(path), 0o777)
	os.Chmod(filepath.Dir(filepath.Dir(path)), 0o777)
	os.Chmod(path, 0o777)
	// The test binary's own directory may be closed to other users: run a copy.
	self, _ := os.Executable()
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := os.MkdirTemp("", "ctlbin")
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	client := filepath.Join(dir, "client")
	if err := os.WriteFile(client, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(client, "-test.run=^$")
	cmd.Env = []string{"CONTROL_TEST_CLIENT=" + path}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v: %s", err, out)
	}
	got := strings.TrimSpace(string(out))
	if !strings.HasPrefix(got, "permission denied: uid 65534") {
		t.Fatalf("other user got %q", got)
	}
	// The refused peer's connection is closed with the reply: a flood of
	// them holds nothing.
	if !strings.HasSuffix(got, "\nclosed") {
		t.Fatalf("the refused connection was not closed after the reply: %q", got)
	}
}

func TestMain(m *testing.M) {
	connlimittest.Main()
	if path := os.Getenv("CONTROL_TEST_CLIENT"); path != "" {
		_, err := NewClient(path).Status(context.Background())
		fmt.Println(err)
		fmt.Println(refusedThenClosed(path))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// planner is a fakeManager that can plan a reload.
type planner struct{ fakeManager }

func (p *planner) PlanReload(context.Context) (ReloadResult, error) {
	return ReloadResult{Restarted: []string{"j/p"}, DryRun: true}, nil
}

// fakeDrainer drains at once.
type fakeDrainer struct{ st *DrainState }

func (d *fakeDrainer) Drain(context.Context) (DrainState, error) {
	d.st = &DrainState{State: DrainDone, By: "request"}
	return *d.st, nil
}
func (d *fakeDrainer) DrainState() *DrainState { return d.st }

// TestPlanDrainAndTimeout: the plan route needs a ReloadPlanner, the
// drain route a Drainer (whose state the status then shows), and a
// timeout crosses the socket as ErrTimeout with the statuses.
func TestPlanDrainAndTimeout(t *testing.T) {
	_, plain := serve(t, &fakeManager{})
	if _, err := plain.PlanReload(t.Context()); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("plan without a planner: %v", err)
	}
	if _, err := plain.Drain(t.Context()); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("drain without a drainer: %v", err)
	}
	d := &fakeDrainer{}
	_, c := serve(t, &planner{fakeManager{actErr: Errorf(ErrTimeout, "j/p not ready after 1s")}}, WithDrainer(d))
	if res, err := c.PlanReload(t.Context()); err != nil || !res.DryRun || res.Restarted[0] != "j/p" {
		t.Fatalf("plan: %+v %v", res, err)
	}
	if st, _ := c.Status(t.Context()); st.Daemon.Drain != nil {
		t.Fatalf("a drain state before any drain: %+v", st.Daemon.Drain)
	}
	if st, err := c.Drain(t.Context()); err != nil || st.State != DrainDone {
		t.Fatalf("drain: %+v %v", st, err)
	}
	if st, _ := c.Status(t.Context()); st.Daemon.Drain == nil || st.Daemon.Drain.State != DrainDone {
		t.Fatalf("status after the drain: %+v", st.Daemon)
	}
	ps, err := c.Act(t.Context(), ActionRequest{Action: "start", Job: "j", Wait: WaitReady})
	if !errors.Is(err, ErrTimeout) || err.Error() != "j/p not ready after 1s" || len(ps) != 1 || ps[0].State != "backoff" {
		t.Fatalf("a timed-out action: %+v %v", ps, err)
	}
}

// numbered is a fakeManager that numbers its events.
type numbered struct{ fakeManager }

func (numbered) LastSeq() uint64 { return 41 }

// TestActionReplyCarriesTheLatestEvent: a back end that numbers its events
// has the latest number in an action's reply, so that a client following
// the events knows when it has seen those that led to the reply.
func TestActionReplyCarriesTheLatestEvent(t *testing.T) {
	_, c := serve(t, &numbered{})
	if r, err := c.Action(t.Context(), ActionRequest{Action: "start", Job: "j"}); err != nil || r.Seq != 41 {
		t.Fatalf("reply %+v %v", r, err)
	}
	_, plain := serve(t, &fakeManager{})
	if r, _ := plain.Action(t.Context(), ActionRequest{Action: "start", Job: "j"}); r.Seq != 0 {
		t.Fatalf("a seq from a back end without one: %+v", r)
	}
}

// refusedThenClosed sends a request on a connection of its own, reads the
// reply and says whether the server closed the connection after it.
func refusedThenClosed(path string) string {
	c, err := net.Dial("unix", path)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	io.WriteString(c, "GET /v1/status HTTP/1.1\r\nHost: vigil\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return err.Error()
	}
	io.Copy(io.Discard, res.Body)
	if _, err := br.ReadByte(); errors.Is(err, io.EOF) {
		return "closed"
	}
	return "kept"
}
