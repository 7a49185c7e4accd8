package guest

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/backend/systemd"
)

// sdRoot is the systemd back end's BOSH root, apart from the stemcell's.
const sdRoot = "/srv/vigil-sd"

var sdJobs = map[string]string{
	// ready 3 s after its start, by its readiness probe; binds port 80.
	"api": `processes:
- name: server
  executable: /bin/sh
  args: ["-c", 'echo hello-journal; sleep 3; touch ` + sdRoot + `/data/api/tmp/ready; ` + termLoop + `']
  capabilities: [NET_BIND_SERVICE]
  health:
    readiness: {exec: [/bin/test, -f, ` + sdRoot + `/data/api/tmp/ready], period: 1s}
`,
	"worker": `processes:
- name: loop
  executable: /bin/sh
  args: ["-c", '` + termLoop + `']
  depends_on: [{job: api, process: server, condition: healthy}]
`,
	"crash": `processes:
- name: boom
  executable: /bin/sh
  args: ["-c", "echo boom; exit 1"]
`,
	// unisolated: the host's namespaces, its unit's limits.
	"side": `processes:
- name: side
  executable: /bin/sh
  args: ["-c", '` + termLoop + `']
  isolation: host
  capabilities: [NET_BIND_SERVICE]
  limits: {memory: 64M, cpuset: "1", cpuset_mems: "0", cpu_weight: 50}
`,
}

// TestSystemdBackend runs the systemd back end on the guest's systemd:
// the generated units, started through vigil's control API, bpm and the
// monit API, with the defects a real systemd showed fixed.
func TestSystemdBackend(t *testing.T) {
	inGuest(t)
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range [][]string{{"systemctl", "status", "--no-pager", "-n", "30", "vigil-*"},
				{"sh", "-c", "tail -n 20 " + sdRoot + "/sys/log/*/*.log"}} {
				t.Logf("%s:\n%s", strings.Join(c, " "), run(t, c[0], c[1:]...))
			}
		}
	})
	for name, yml := range sdJobs {
		write(t, filepath.Join(sdRoot, "jobs", name, "config", "bpm.yml"), yml, 0o644)
	}
	write(t, sdRoot+"/monit/job/0000_worker.monitrc", "check process worker\n"+
		"  with pidfile "+sdRoot+"/sys/run/bpm/worker/loop.pid\n"+
		"  start program \""+sdRoot+"/jobs/bpm/bin/bpm start worker -p loop\"\n"+
		"  stop program \""+sdRoot+"/jobs/bpm/bin/bpm stop worker -p loop\"\n  group vcap\n", 0o644)
	write(t, sdRoot+"/bosh/etc/monitrc", "set daemon 10\nset httpd port 2832 and use address 127.0.0.1\n"+
		"  allow cleartext "+sdRoot+"/monit/monit.user\ninclude "+sdRoot+"/monit/job/*.monitrc\n", 0o700)
	write(t, sdRoot+"/monit/monit.user", "vcap:random-password", 0o600)
	vigil := bin("vigil")
	sh(t, vigil, "install", "--root", sdRoot)
	out := sh(t, vigil, "systemd", "generate", "--root", sdRoot, "--out", "/etc/systemd/system")
	t.Logf("vmrig: vigil systemd generate:\n%s", out)
	sh(t, "systemctl", "daemon-reload")

	ctx, cancel := context.WithCancel(context.Background())
	daemon := exec.CommandContext(ctx, vigil, "daemon", "--backend", "systemd", "--root", sdRoot)
	daemon.Stdout, daemon.Stderr = os.Stderr, os.Stderr
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); daemon.Wait() }()
	l, _ := boshpath.New(sdRoot)
	sdSock := l.ControlSocket()
	api := actOn(t, sdSock, control.ActionStart, "api") // systemctl start waits for READY=1

	t.Run("nothing starts at boot by itself", sdStatic)
	t.Run("the executable runs as its bpm user with its capabilities only", func(t *testing.T) { sdIdentity(t, api) })
	t.Run("readiness gates the dependant and a slow start is not killed", sdReadiness)
	t.Run("output reaches bpm's log file and the journal", func(t *testing.T) { sdJournal(t, l) })
	t.Run("start and stop through the control API, bpm and the monit API", func(t *testing.T) { sdActions(t, sdSock) })
	t.Run("a crash loop backs off", sdBackoff)
	t.Run("isolation: host runs in the host's namespaces, pinned and limited by its unit", func(t *testing.T) { sdHost(t, sdSock) })

	cancel()
	daemon.Wait()
	t.Run("change latency to vigil events: D-Bus signals against the systemctl show poll", func(t *testing.T) { sdLatency(t, l) })
}

// sdStatic: nothing starts at boot by itself.
func sdStatic(t *testing.T) {
	for _, u := range []string{"vigil-api-server.service", "vigil-api.target", "vigil-worker-loop.service"} {
		if got := strings.TrimSpace(run(t, "systemctl", "is-enabled", u)); got != "static" {
			t.Errorf("%s is %q, want static (no [Install])", u, got)
		}
	}
}

// sdIdentity: the executable runs as its bpm user with its capabilities only.
func sdIdentity(t *testing.T, api control.ProcessStatus) {
	exe := execOf(t, api.PID)
	st := procStatus(t, exe)
	if st["Uid"] != "1000 1000 1000 1000" || st["Gid"] != "1000 1000 1000 1000" {
		t.Errorf("api/server runs as uid %q gid %q, want vcap's 1000", st["Uid"], st["Gid"])
	}
	for _, k := range []string{"CapEff", "CapPrm", "CapBnd"} {
		if st[k] != "0000000000000400" {
			t.Errorf("%s %q, want NET_BIND_SERVICE only", k, st[k])
		}
	}
	t.Logf("vmrig: api/server (pid %d) Uid %s CapEff %s", exe, st["Uid"], st["CapEff"])
}

// sdReadiness: readiness gates the dependant and a slow start is not killed.
func sdReadiness(t *testing.T) {
	a := show(t, "vigil-api-server.service", "ExecMainStartTimestampMonotonic", "ActiveEnterTimestampMonotonic", "TimeoutStartUSec", "Type")
	w := show(t, "vigil-worker-loop.service", "ExecMainStartTimestampMonotonic")
	aStart, aReady, wStart := usec(a[0]), usec(a[1]), usec(w[0])
	if aReady-aStart < 3_000_000 {
		t.Errorf("api/server active %d µs after its start: not held until its readiness probe (3 s)", aReady-aStart)
	}
	if wStart < aReady {
		t.Errorf("worker/loop started at %d µs, before api/server was ready at %d", wStart, aReady)
	}
	if a[2] != "infinity" || a[3] != "notify" {
		t.Errorf("api/server TimeoutStartUSec %q Type %q, want infinity and notify", a[2], a[3])
	}
	t.Logf("vmrig: api/server ready %.1f s after its start; worker/loop started %.1f s after that",
		float64(aReady-aStart)/1e6, float64(wStart-aReady)/1e6)
}

// sdJournal: output reaches bpm's log file and the journal.
func sdJournal(t *testing.T, l boshpath.Layout) {
	if log := readTrim(t, l.StdoutLog("api", "server")); !strings.Contains(log, "hello-journal") {
		t.Errorf("stdout log: %q", log)
	}
	waitJournal(t, "vigil-api-server.service", "", "hello-journal") // journald may lag a little
}

// sdActions: start and stop through the control API, bpm and the monit API.
func sdActions(t *testing.T, sdSock string) {
	if p := actOn(t, sdSock, control.ActionStop, "worker"); p.State != "stopped" {
		t.Fatalf("vigil stop worker: %+v", p)
	}
	at := cursor(t)
	post(t, "http://127.0.0.1:2832/worker", "action=start") // answered at once, as monit does
	waitJournal(t, "vigil-worker-loop.service", at, "up")
	at = cursor(t)
	bpm(t, "stop", "worker", "-p", "loop")                      // through the daemon: waits for the stop
	waitJournal(t, "vigil-worker-loop.service", at, "got TERM") // the ladder's first signal
	bpm(t, "start", "worker", "-p", "loop")
	if got := strings.TrimSpace(run(t, "systemctl", "is-active", "vigil-worker-loop.service")); got != "active" {
		t.Errorf("after bpm start: %s", got)
	}
}

// bpm runs the bpm personality on the systemd back end's root.
func bpm(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(sdRoot+"/jobs/bpm/bin/bpm", args...)
	cmd.Env = append(os.Environ(), "VIGIL_ROOT="+sdRoot)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bpm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// sdBackoff: a crash loop backs off.
func sdBackoff(t *testing.T) {
	waitJournal(t, "vigil-crash-boom.service", "", "restart counter is at 5")
	v := show(t, "vigil-crash-boom.service", "RestartUSec", "RestartUSecNext", "NRestarts", "ActiveState")
	if v[1] == v[0] || v[1] == "" {
		t.Errorf("RestartUSecNext %q after %s restarts, want more than RestartUSec %q", v[1], v[2], v[0])
	}
	t.Logf("vmrig: crash/boom after %s restarts: RestartUSec %s, next delay %s (%s)", v[2], v[0], v[1], v[3])
}

// sdLatency: change latency: D-Bus signals against the systemctl show poll.
func sdLatency(t *testing.T, l boshpath.Layout) {
	for _, mode := range []string{"poll", "dbus"} {
		lat := changeLatency(t, l, mode)
		t.Logf("vmrig: change latency (%s): %v", mode, lat)
	}
}

// changeLatency runs a driver with the given change watcher ("poll": the
// systemctl poll every 2 s, "dbus": the default, systemd's signals) and
// measures, five times, the time from the kill of worker/loop's main process
// (the unit fails and systemd restarts it) to its exited event on the
// control socket's stream, the one `vigil events` prints.
func changeLatency(t *testing.T, l boshpath.Layout, mode string) []time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := systemd.Config{Layout: l, Jobs: []string{"worker", "api"},
		Units: systemd.Options{Vigil: bin("vigil")}, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if mode == "poll" {
		cfg.Watcher = systemd.Poller(2 * time.Second)
	}
	d := systemd.New(cfg)
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	actOn(t, l.ControlSocket(), control.ActionStart, "worker")
	events, err := control.NewClient(l.ControlSocket()).Events(ctx, 0)
	if err != nil {
		t.Fatalf("%s: events: %v", mode, err)
	}
	var out []time.Duration
	next := func(mode string, began time.Time, kinds ...string) string {
		deadline := time.After(time.Minute)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("%s: the event stream ended", mode)
				}
				if ev.Job == "worker" && !ev.Time.Before(began) && slices.Contains(kinds, ev.Kind) {
					return ev.Kind
				}
			case <-deadline:
				t.Fatalf("%s: no %v event within a minute of the kill", mode, kinds)
			}
		}
	}
	for range 5 {
		main := workerMain(t, l)
		began := time.Now()
		if err := unix.Kill(main, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The first event of this kill: its exit, or (a poll that missed
		// the down state) its restart.
		kind := next(mode, began, control.EventExited, control.EventRestarted)
		out = append(out, time.Since(began).Round(time.Millisecond))
		if kind == control.EventExited {
			// up again now, not after systemd's growing delay; the round
			// ends with the event of that start
			actOn(t, l.ControlSocket(), control.ActionStart, "worker")
			next(mode, began, control.EventRestarted, control.EventStarted)
		}
	}
	return out
}

// workerMain is worker/loop's main process, vigil exec, started again when
// the unit has none (between a restart's stop and its start, systemd's
// MainPID is 0, and a kill of 0 would take the rig's own process group).
func workerMain(t *testing.T, l boshpath.Layout) int {
	t.Helper()
	if main := mainPID(t, "vigil-worker-loop.service"); main > 1 {
		return main
	}
	actOn(t, l.ControlSocket(), control.ActionStart, "worker")
	main := mainPID(t, "vigil-worker-loop.service")
	if main <= 1 {
		t.Fatalf("worker/loop has no main process after its start: %v",
			show(t, "vigil-worker-loop.service", "ActiveState", "SubState", "MainPID"))
	}
	return main
}

// actOn is act for another root's daemon.
func actOn(t *testing.T, socket, action, job string) control.ProcessStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		sts, err := control.NewClient(socket).Act(ctx, control.ActionRequest{Action: action, Job: job})
		if err == nil && len(sts) == 1 {
			st, _ := control.NewClient(socket).Status(ctx)
			p, _ := processOf(st, sts[0].Job, sts[0].Process)
			return p
		}
		if ctx.Err() != nil {
			t.Fatalf("%s %s: %v", action, job, err)
		}
		if strings.Contains(fmt.Sprint(err), "no job") {
			// still in its first load: a reload waits for it (the loads
			// are serialised), then the job is known
			if _, err := control.NewClient(socket).Reload(ctx); err != nil {
				t.Fatalf("reload: %v", err)
			}
			continue
		}
		watchOnce(ctx, filepath.Dir(socket))
	}
}

// run is sh without failing: some commands say what they say with a
// non-zero status.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, _ := exec.Command(name, args...).CombinedOutput()
	return string(out)
}

// show reads properties of a unit, in the order asked (systemctl prints
// them in its own).
func show(t *testing.T, unit string, props ...string) []string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(sh(t, "systemctl", "show", "-p", strings.Join(props, ","), unit), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	vals := make([]string, len(props))
	for i, p := range props {
		vals[i] = got[p]
	}
	return vals
}

// execOf is the executable's pid: the init's child (the systemd back end's
// status names the init only), in the children list of whichever of the
// init's threads forked it.
func execOf(t *testing.T, initPID int) int {
	t.Helper()
	lists, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", initPID))
	var f []string
	for _, l := range lists {
		b, _ := os.ReadFile(l)
		f = append(f, strings.Fields(string(b))...)
	}
	if err != nil || len(f) == 0 {
		t.Fatalf("no executable below init %d: %v", initPID, err)
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

func usec(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// procStatus is /proc/PID/status, fields joined by single spaces.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out
}

// cursor is the journal's position now, for waitJournal.
func cursor(t *testing.T) string {
	t.Helper()
	out := sh(t, "journalctl", "--no-pager", "-n", "0", "--show-cursor")
	_, c, ok := strings.Cut(out, "-- cursor: ")
	if !ok {
		t.Fatalf("no journal cursor: %q", out)
	}
	return strings.TrimSpace(c)
}

// waitJournal follows a unit's journal past after ("" from its start)
// until a line contains want (journalctl -f: inotify, no poll).
func waitJournal(t *testing.T, unit, after, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--no-pager", "-f", "-o", "cat", "-u", unit}
	if after != "" {
		args = append(args, "--after-cursor="+after)
	} else {
		args = append(args, "-n", "all")
	}
	cmd := exec.CommandContext(ctx, "journalctl", args...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			return
		}
	}
	t.Fatalf("%s's journal never said %q", unit, want)
}

func post(t *testing.T, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("vcap", "random-password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s %s: %s", url, body, resp.Status)
	}
}
