package daemon

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (h *harness) write(rel, content string, mode os.FileMode) {
	h.root.Write(filepath.Join(h.layout.Root(), rel), content, mode)
}

type xmlStatus struct {
	Incarnation string `xml:"incarnation,attr"`
	Services    []struct {
		Name    string `xml:"name,attr"`
		Status  int    `xml:"status"`
		Monitor int    `xml:"monitor"`
		Pending int    `xml:"pendingaction"`
		PID     int    `xml:"pid"`
	} `xml:"services>service"`
}

type monitAPI struct {
	t    *testing.T
	base string
}

func (a monitAPI) do(method, path, body string) (int, string) {
	req, _ := http.NewRequest(method, a.base+path, strings.NewReader(body))
	req.SetBasicAuth("vcap", "random-password")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (a monitAPI) service(name string) (st struct{ Status, Monitor, Pending, PID int }) {
	code, body := a.do("GET", "/_status2?format=xml", "")
	if code != 200 {
		a.t.Fatalf("status: %d %s", code, body)
	}
	var x xmlStatus
	d := xml.NewDecoder(strings.NewReader(body))
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // ASCII here
	if err := d.Decode(&x); err != nil {
		a.t.Fatal(err)
	}
	for _, s := range x.Services {
		if s.Name == name {
			st.Status, st.Monitor, st.Pending, st.PID = s.Status, s.Monitor, s.Pending, s.PID
			return st
		}
	}
	a.t.Fatalf("no service %s in %s", name, body)
	return st
}

// writeMonitrc writes the stemcell's monitrc (a cycle of cycle seconds,
// the HTTP API on port, the job files included) and its credentials.
func (h *harness) writeMonitrc(cycle, port int) {
	h.write("bosh/etc/monitrc", fmt.Sprintf("set daemon %d\nset httpd port %d and use address 127.0.0.1\n"+
		"  allow cleartext /var/vcap/monit/monit.user\ninclude /var/vcap/monit/job/*.monitrc\n", cycle, port), 0o600)
	h.write("monit/monit.user", "vcap:random-password", 0o600)
}

// TestMonitControlFiles: the control files decide what runs; a bpm shim
// check runs natively, a ctl script check runs monit's way; the agent's
// HTTP calls start, stop and unmonitor them.
func TestMonitControlFiles(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.writeJob("idle", pr{"server", "serve", nil}) // no check: not started
	port := freePort(t)
	h.writeMonitrc(10, port)
	pidPath := filepath.Join(h.layout.Root(), "sys", "run", "ctl", "ctl.pid")
	h.write("jobs/ctl/bin/ctl", "#!/bin/sh\ncase $1 in\n"+
		"start) mkdir -p "+filepath.Dir(pidPath)+"; sleep 100000 & echo $! > "+pidPath+" ;;\n"+
		"stop) kill $(cat "+pidPath+") ;;\nesac\n", 0o755)
	h.write("monit/job/0001_web.monitrc", "check process web\n  with pidfile /var/vcap/sys/run/bpm/web/server.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p server\"\n"+
		"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p server\"\n  group vcap\n"+
		"  if failed port 8080 protocol http then restart\n", 0o644)
	h.write("monit/job/0000_ctl.monitrc", "check process ctl with pidfile /var/vcap/sys/run/ctl/ctl.pid\n"+
		"  start program \"/var/vcap/jobs/ctl/bin/ctl start\" with timeout 10 seconds\n"+
		"  stop program \"/var/vcap/jobs/ctl/bin/ctl stop\"\n  depends on web\n  group vcap\n", 0o644)
	// The job files are written for /var/vcap, as on a stemcell: their
	// programs run the test root's scripts.
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	events, err := h.c.Events(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.d.tree.Get(supervise.ID{Job: "idle", Process: "server"}); ok {
		t.Fatal("a bpm job without a check was started")
	}
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	// ctl starts once web, which it depends on, runs.
	h.waitFor("ctl running", func() bool {
		st, ok := h.d.tree.Get(supervise.ID{Job: "ctl", Process: "ctl"})
		return ok && st.Status().State == supervise.Running && api.service("ctl").Monitor == 1
	})
	if st := api.service("web"); st.Monitor != 1 || st.Status != 0 {
		t.Fatalf("web: %+v", st)
	}
	ctlPID := api.service("ctl").PID
	if ctlPID == 0 || !alive(ctlPID) {
		t.Fatalf("ctl pid %d", ctlPID)
	}
	if st, _ := h.c.Status(t.Context()); strings.Contains(fmt.Sprint(st.Problems), "not yet enforced") {
		t.Fatalf("problems: %+v", st.Problems)
	}
	// Unmonitor web (the cascade unmonitors ctl, which depends on it); a
	// kill is then not restarted.
	if code, body := api.do("POST", "/web", "action=unmonitor"); code != 200 {
		t.Fatalf("unmonitor: %d %s", code, body)
	}
	h.waitFor("unmonitored", func() bool { return api.service("web").Monitor == 0 && api.service("ctl").Monitor == 0 })
	unix.Kill(first.PID, unix.SIGKILL)
	h.waitFor("the exit", func() bool { return h.status("web", "server").State == "stopped" })
	// Stop ctl runs its stop program.
	if code, _ := api.do("POST", "/ctl", "action=stop"); code != 200 {
		t.Fatal(code)
	}
	h.waitFor("ctl stopped", func() bool { return h.status("ctl", "ctl").State == "stopped" && api.service("ctl").Pending == 0 })
	if _, err := monit.StartTime(ctlPID); err == nil {
		t.Fatal("ctl's process survived its stop") // gone or a zombie nobody reaps yet
	}
	// The agent's actions are operators' actions too, in the event stream.
	for want := []string{"web/server: unmonitor", "ctl/ctl: stop"}; len(want) > 0; {
		ev := receiveEvent(t, events)
		if ev.Kind == control.EventAction {
			if got := ev.Job + "/" + ev.Process + ": " + ev.Message; got != want[0]+", asked by monit's HTTP API (the BOSH agent, monit's command line)" {
				t.Fatalf("action event %q, want %s", got, want[0])
			}
			want = want[1:]
		}
	}
	// Start ctl: web (its prerequisite) starts first and is monitored again.
	if code, _ := api.do("POST", "/ctl", "action=start"); code != 200 {
		t.Fatal(code)
	}
	h.rep.Expect(t, "ready")
	h.waitFor("both up", func() bool {
		return api.service("ctl").Monitor == 1 && api.service("web").Monitor == 1 && api.service("ctl").Pending == 0
	})
	if code, body := api.do("POST", "/nope", "action=start"); code != 404 {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := (monitAPI{t: t, base: api.base}).do("GET", "/_status2?format=xml", ""); code != 200 {
		t.Fatal(code)
	}
	// The daemon's own stop stops the ctl process too.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestLeaveRunningThenAdopt: a daemon that ends in VM mode leaves its
// processes running; the next one adopts them (same pids) and restarts one
// that dies later.
func TestLeaveRunningThenAdopt(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	h.leaveRunning = true
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	before := h.status("web", "server")
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if !alive(before.PID) || !alive(first.PID) {
		t.Fatal("the process did not outlive its daemon")
	}
	h.leaveRunning = false
	h.start(supervise.Timing{})
	after := h.status("web", "server")
	if after.State != "running" || after.PID != before.PID || after.ExecPID != first.PID {
		t.Fatalf("not adopted: before %+v, after %+v", before, after)
	}
	unix.Kill(first.PID, unix.SIGKILL)
	second := h.rep.Expect(t, "ready")
	h.waitFor("the restart", func() bool { return h.status("web", "server").ExecPID == second.PID })
}

// TestMonitBootFailingPrerequisite: while the daemon waits, at its start,
// for a check process whose start program fails (the whole start timeout,
// as monit waits), the service that depends on it reads initializing, as
// under monit's first cycle, not "not monitored"; and a SIGTERM then ends
// the daemon at once instead of waiting the timeout out.
func TestMonitBootFailingPrerequisite(t *testing.T) {
	h := newHarness(t)
	port := freePort(t)
	root := h.layout.Root()
	fifo := filepath.Join(root, "started.fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	h.writeMonitrc(1, port)
	h.write("jobs/base/bin/ctl", "#!/bin/sh\necho started > "+fifo+"\nexit 1\n", 0o755)
	h.write("monit/job/0000_base.monitrc", "check process base with pidfile "+root+"/sys/run/base.pid\n"+
		"  start program \""+root+"/jobs/base/bin/ctl\" with timeout 3600 seconds\n"+
		"  stop program \"/bin/true\"\n  group vcap\n"+
		"check process dependant with pidfile "+root+"/sys/run/dependant.pid\n"+
		"  start program \"/bin/true\"\n  stop program \"/bin/true\"\n  depends on base\n  group vcap\n", 0o644)
	self, _ := os.Executable()
	d, err := New(Config{Layout: h.layout, Init: self, NoIsolation: true, LeaveRunning: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	f, err := os.Open(fifo) // the start program runs: the daemon waits for it
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(f)
	f.Close()
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	if st := api.service("dependant"); st.Monitor != monit.Initializing {
		t.Fatalf("dependant while its prerequisite starts: %+v", st)
	}
	cancel() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testproc.Guard): // a failure guard: the start timeout is an hour
		t.Fatal("the daemon's end waits for a failing start")
	}
}

// TestMonitNameConflictKeepsTheHealthyJob: a new job file whose check
// repeats the name of a service that runs is refused, all of it, with its
// own file and line, and the running service stays running and monitored,
// at a reload and at a fresh start of the daemon (whatever the agent's
// numbering puts first).
func TestMonitNameConflictKeepsTheHealthyJob(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	port := freePort(t)
	h.writeMonitrc(1, port)
	h.write("monit/job/0000_web.monitrc", "check process web\n  with pidfile /var/vcap/sys/run/bpm/web/server.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p server\"\n"+
		"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p server\"\n  group vcap\n", 0o644)
	h.leaveRunning = true
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	// The agent's next file, parsed first (monit reads a glob backwards).
	newFile := filepath.Join(h.layout.Root(), "monit", "job", "0001_new.monitrc")
	h.write("monit/job/0001_new.monitrc", "check process other with pidfile /var/vcap/sys/run/other.pid\n"+
		"  start program \"/bin/true\"\n"+
		"check process WEB with pidfile /var/vcap/sys/run/web2.pid\n  start program \"/bin/true\"\n", 0o644)
	wantProblem := func(st control.Status) {
		t.Helper()
		for _, p := range st.Problems {
			if p.File == newFile && p.Line == 3 && strings.HasPrefix(p.Message, "service name conflict, WEB already defined at ") {
				return
			}
		}
		t.Fatalf("no conflict blamed on %s:3 in %+v", newFile, st.Problems)
	}
	if _, err := h.c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	st, _ := h.c.Status(t.Context())
	wantProblem(st)
	check := func(when string) {
		t.Helper()
		h.waitFor(when+": web monitored", func() bool { return api.service("web").Monitor == monit.Monitored })
		if s := h.status("web", "server"); s.State != "running" || s.ExecPID != first.PID {
			t.Fatalf("%s: web %+v", when, s)
		}
		if code, _ := api.do("GET", "/other", ""); code != http.StatusNotFound {
			t.Fatalf("%s: the refused file's other service exists (%d)", when, code)
		}
	}
	check("after the reload")
	// A fresh daemon: the previous one's monit.state says which file ran web.
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.start(supervise.Timing{})
	st, _ = h.c.Status(t.Context())
	wantProblem(st)
	check("after a fresh start")
}

// TestMonitReloadDoesNotWaitForACycle: as monit's, a reload (the agent's
// "monit reload") returns once its starts have settled, without waiting
// for the new engine's first cycle; and a test the cycle is waiting on
// (an answer that never comes, within a 60 s timeout) holds up neither that
// nor the daemon's shutdown.
func TestMonitReloadDoesNotWaitForACycle(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	port := freePort(t)
	h.writeMonitrc(1, port)
	h.write("monit/job/0000_web.monitrc", "check process web\n  with pidfile /var/vcap/sys/run/bpm/web/server.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p server\"\n"+
		"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p server\"\n  group vcap\n", 0o644)
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	asked := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = io.ReadFull(c, make([]byte, 4)) // "GET ": the test waits for the answer now
			asked <- c                             // held open, never answered
		}
	}()
	h.write("monit/job/0001_slow.monitrc", fmt.Sprintf("check host slow with address 127.0.0.1\n"+
		"  if failed port %d protocol http with timeout 60 seconds then alert\n", ln.Addr().(*net.TCPAddr).Port), 0o644)
	within := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatalf("%s waits for the host test's 60 s timeout", what)
		}
	}
	within("the reload", func() {
		if _, err := h.c.Reload(t.Context()); err != nil {
			t.Error(err)
		}
	})
	c := <-asked // the new engine's first cycle is in the test
	defer c.Close()
	within("the shutdown", func() {
		if err := h.stop(); err != nil {
			t.Error(err)
		}
	})
}

// TestMonitReloadDoesNotWaitForAStart: a reload brings a check whose start
// program never writes its pid file (its start waits an hour): the reload
// returns without waiting for that start (it used to wait for it to
// settle, holding the daemon's lock, so that the next `monit reload` and
// every action waited too, with web shown initializing all along), and so
// does the next; the engine the second reload puts in force takes the
// start over, web stays running.
func TestMonitReloadDoesNotWaitForAStart(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", nil})
	port := freePort(t)
	h.writeMonitrc(10, port)
	h.write("monit/job/0000_web.monitrc", shimCheck("web"), 0o644)
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	h.write("monit/job/0001_x.monitrc", "check process x with pidfile /var/vcap/sys/run/x/x.pid\n"+
		"  start program \"/bin/sleep 3600\" with timeout 3600 seconds\n  stop program \"/bin/true\"\n  group vcap\n", 0o644)
	for i := range 2 {
		done := make(chan error, 1)
		go func() { _, err := h.c.Reload(t.Context()); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(testproc.Guard): // a failure guard only
			t.Fatalf("reload %d waits for x's start", i+1)
		}
	}
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	h.waitFor("x starting, web running", func() bool {
		x, web := api.service("x"), api.service("web")
		return x.Monitor == 2 && h.status("x", "x").State == "starting" && web.Monitor != 0 && web.PID == first.PID
	})
}
