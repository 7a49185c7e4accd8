package systemd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/pidfile"
	"github.com/vigil-bosh/vigil/internal/testroot"
)

type fakeHost struct {
	fake, units, runtime string
	root                 *testroot.Root
	l                    boshpath.Layout
}

// newFakeHost makes a BOSH root with two jobs and a fake systemctl.
func newFakeHost(t *testing.T) (*fakeHost, *Driver) {
	t.Helper()
	root := testroot.New(t, "")
	l := root.Layout
	h := &fakeHost{fake: t.TempDir(), units: t.TempDir(), runtime: t.TempDir(), root: root, l: l}
	if err := os.MkdirAll(filepath.Join(h.fake, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.writeJob(t, "web", "web", "worker")
	h.writeJob(t, "db", "postgres")
	self := root.Self
	t.Setenv(fakeEnv, h.fake)
	t.Setenv("GORACE", "atexit_sleep_ms=0") // a race-enabled fake would linger 1 s at each exit
	d := New(Config{Layout: l, UnitDir: h.units, RuntimeDir: h.runtime, Systemctl: self,
		Units: Options{Vigil: "/usr/bin/vigil"}, Version: "test"})
	return h, d
}

func (h *fakeHost) writeJob(t *testing.T, name string, procs ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("processes:\n")
	for _, p := range procs {
		exe := filepath.Join(h.l.Root(), "packages", name, "bin", p)
		h.root.Write(exe, "#!/bin/sh\n", 0o755)
		b.WriteString("- name: " + p + "\n  executable: " + exe + "\n")
	}
	h.root.Config(name, b.String())
}

// calls returns and forgets the systemctl calls made so far.
func (h *fakeHost) calls(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(h.fake, "calls")
	b, _ := os.ReadFile(path)
	os.Remove(path)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (h *fakeHost) setState(t *testing.T, unit, state string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.fake, "state", unit), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
}

func states(t *testing.T, d *Driver) map[string]control.ProcessStatus {
	t.Helper()
	st, err := d.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Daemon.Backend != "systemd" {
		t.Errorf("backend %q", st.Daemon.Backend)
	}
	out := map[string]control.ProcessStatus{}
	for _, p := range st.Processes {
		out[p.Job+"/"+p.Process] = p
	}
	return out
}

func TestDriverLifecycle(t *testing.T) {
	h, d := newFakeHost(t)
	ctx := context.Background()
	garden := filepath.Join(h.units, "garden.service")
	if err := os.WriteFile(garden, []byte("[Service]\nDelegate=yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	res, err := d.Reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"db/postgres", "web/web", "web/worker"}; !slices.Equal(res.Started, want) {
		t.Errorf("started %v, want %v", res.Started, want)
	}
	want := []string{"daemon-reload", "start -- vigil-db-postgres.service vigil-web-web.service vigil-web-worker.service"}
	if got := h.calls(t); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	for id, p := range states(t, d) {
		if p.State != "running" || p.Wanted != "up" || !p.Ready {
			t.Errorf("%s: %+v", id, p)
		}
	}
	h.calls(t)

	// systemd restarts a crash by itself: vigil only reports it.
	h.setState(t, "vigil-web-worker.service", "activating auto-restart 3")
	if p := states(t, d)["web/worker"]; p.State != "backoff" || p.Restarts != 3 {
		t.Errorf("after a crash: %+v", p)
	}
	h.setState(t, "vigil-web-worker.service", "failed failed 5")
	if p := states(t, d)["web/worker"]; p.State != "failed" || p.LastExit == nil || p.LastExit.Signal != "SIGQUIT" {
		t.Errorf("after giving up: %+v (exit %+v)", p, p.LastExit)
	}

	// Actions go through systemctl and wait for it.
	h.calls(t)
	out, err := d.Act(ctx, control.ActionRequest{Action: control.ActionStop, Job: "web"})
	if err != nil || len(out) != 2 || out[0].State != "stopped" || out[0].Wanted != "down" {
		t.Errorf("stop: %+v, %v", out, err)
	}
	if got := h.calls(t); got[0] != "stop -- vigil-web-web.service vigil-web-worker.service" {
		t.Errorf("stop calls %q", got)
	}
	if err := os.WriteFile(filepath.Join(h.fake, "fail"), []byte("vigil-web-web.service\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = d.Act(ctx, control.ActionRequest{Action: control.ActionStart, Job: "web", Process: "web"})
	if !errors.Is(err, control.ErrFailed) || !strings.Contains(err.Error(), "web/web is failed") {
		t.Errorf("failing start: %v", err)
	}
	os.Remove(filepath.Join(h.fake, "fail"))
	if _, err := d.Act(ctx, control.ActionRequest{Action: control.ActionStart, Job: "nope"}); !errors.Is(err, control.ErrNotFound) {
		t.Errorf("unknown job: %v", err)
	}

	// Unmonitor: a runtime drop-in that turns restarts off.
	h.calls(t)
	if _, err := d.Act(ctx, control.ActionRequest{Action: control.ActionUnmonitor, Job: "db"}); err != nil {
		t.Fatal(err)
	}
	if p := states(t, d)["db/postgres"]; !p.Unmonitored {
		t.Errorf("not unmonitored: %+v", p)
	}
	if _, err := d.Act(ctx, control.ActionRequest{Action: control.ActionMonitor, Job: "db"}); err != nil {
		t.Fatal(err)
	}
	if p := states(t, d)["db/postgres"]; p.Unmonitored {
		t.Errorf("still unmonitored: %+v", p)
	}

	// A changed job restarts, an unchanged one is left, a removed one is
	// stopped and its units removed; the foreign unit is never touched.
	h.writeJob(t, "web", "web")
	if err := os.RemoveAll(h.l.JobDir("db")); err != nil {
		t.Fatal(err)
	}
	h.calls(t)
	res, err = d.Reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Stopped, []string{"db/postgres", "web/worker"}) || !slices.Equal(res.Unchanged, []string{"web/web"}) {
		t.Errorf("reload: %+v", res)
	}
	want = []string{"stop -- vigil-db-postgres.service vigil-web-worker.service", "daemon-reload",
		"start -- vigil-web-web.service"}
	if got := h.calls(t); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
	left, _ := filepath.Glob(filepath.Join(h.units, "*"))
	for i := range left {
		left[i] = filepath.Base(left[i])
	}
	if want := []string{"garden.service", "vigil-web-web.service", "vigil-web.target"}; !slices.Equal(left, want) {
		t.Errorf("unit directory holds %v, want %v", left, want)
	}
}

// A job whose bpm.yml is broken keeps its units, even in a fresh daemon
// that never loaded it.
func TestDriverKeepsUnitsOfBrokenJob(t *testing.T) {
	h, d := newFakeHost(t)
	ctx := context.Background()
	if _, err := d.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.l.BPMConfig("db"), []byte("processes: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.calls(t)
	fresh := New(d.cfg)
	res, err := fresh.Reload(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stopped) > 0 || len(res.Problems) == 0 || res.Problems[0].Job != "db" {
		t.Errorf("reload: %+v", res)
	}
	for _, c := range h.calls(t) {
		if strings.Contains(c, "postgres") {
			t.Errorf("touched the broken job: %s", c)
		}
	}
	if _, err := os.Stat(filepath.Join(h.units, "vigil-db-postgres.service")); err != nil {
		t.Errorf("unit of the broken job: %v", err)
	}
}

// A change that only `vigil exec` reads (the args) still rewrites the unit,
// through its configuration digest, and so restarts the process.
func TestDriverRestartsChangedArgs(t *testing.T) {
	h, d := newFakeHost(t)
	ctx := context.Background()
	if _, err := d.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := h.l.BPMConfig("db")
	b, _ := os.ReadFile(cfg)
	if err := os.WriteFile(cfg, append(b, "  args: [--fast]\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	h.calls(t)
	res, err := d.Reload(ctx)
	if err != nil || !slices.Equal(res.Restarted, []string{"db/postgres"}) || len(res.Unchanged) != 2 {
		t.Errorf("reload: %+v, %v", res, err)
	}
	want := []string{"daemon-reload", "restart -- vigil-db-postgres.service",
		"start -- vigil-web-web.service vigil-web-worker.service"}
	if got := h.calls(t); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
}

// TestSignalNeverReachesAStranger: a pid file that names a process that is
// not this process's init (a recycled pid, a planted file) is refused.
func TestSignalNeverReachesAStranger(t *testing.T) {
	h, d := newFakeHost(t)
	if _, err := d.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	stranger := exec.Command("sleep", "1000")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stranger.Process.Kill(); stranger.Wait() })
	if err := os.MkdirAll(h.l.PidDir("web"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := pidfile.Write(h.l.PidFile("web", "web"), stranger.Process.Pid); err != nil {
		t.Fatal(err)
	}
	err := d.Signal(context.Background(), control.SignalRequest{Job: "web", Process: "web", Signal: "TERM"})
	if !errors.Is(err, control.ErrFailed) || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("signal to a stranger's pid: %v", err)
	}
}

// TestActWaits: a start that waits for ready reads the unit's state after
// systemctl's job, a start that waits for nothing does not block on
// systemd's job (--no-block), and one whose unit ends up failed fails.
func TestActWaits(t *testing.T) {
	h, d := newFakeHost(t)
	ctx := context.Background()
	if _, err := d.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	h.calls(t)
	out, err := d.Act(ctx, control.ActionRequest{Action: control.ActionRestart, Job: "db", Wait: control.WaitReady, UptimeSeconds: 1})
	if err != nil || len(out) != 1 || !out[0].Ready {
		t.Fatalf("restart --wait ready: %+v %v", out, err)
	}
	h.calls(t)
	if _, err := d.Act(ctx, control.ActionRequest{Action: control.ActionStop, Job: "db", Wait: control.WaitNone}); err != nil {
		t.Fatal(err)
	}
	if got := h.calls(t); got[0] != "stop --no-block -- vigil-db-postgres.service" {
		t.Fatalf("calls %q", got)
	}
	if err := os.WriteFile(filepath.Join(h.fake, "fail"), []byte("vigil-db-postgres.service\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Act(ctx, control.ActionRequest{Action: control.ActionStart, Job: "db", Wait: control.WaitRunning}); !errors.Is(err, control.ErrFailed) {
		t.Fatalf("a start that fails: %v", err)
	}
}

// TestPlanReload: the plan names what a reload would restart and start,
// and neither calls systemctl nor writes a unit.
func TestPlanReload(t *testing.T) {
	h, d := newFakeHost(t)
	ctx := context.Background()
	if _, err := d.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	h.calls(t)
	h.writeJob(t, "db", "postgres", "backup")
	before, _ := os.ReadDir(h.units)
	res, err := d.PlanReload(ctx)
	if err != nil || !res.DryRun || !slices.Equal(res.Started, []string{"db/backup"}) ||
		!slices.Equal(res.Unchanged, []string{"db/postgres", "web/web", "web/worker"}) {
		t.Fatalf("plan %+v %v", res, err)
	}
	after, _ := os.ReadDir(h.units)
	if got := h.calls(t); len(after) != len(before) || len(got) != 1 || got[0] != "" {
		t.Fatalf("the plan changed something: calls %q, units %d -> %d", got, len(before), len(after))
	}
}
