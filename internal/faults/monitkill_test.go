package faults

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// monitAPI is monit's HTTP API on a rig's root, spoken as the agent does.
type monitAPI struct {
	t    *testing.T
	base string
}

// monitrc writes the stemcell's monitrc (a cycle of cycle seconds, the
// API on a free port) and the job file 0000_web.monitrc with checks; it
// returns the API.
func (r *rig) monitrc(cycle int, checks ...string) monitAPI {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r.write(filepath.Join(r.layout.Root(), "bosh", "etc", "monitrc"), fmt.Sprintf("set daemon %d\n"+
		"set httpd port %d and use address 127.0.0.1\n  allow cleartext /var/vcap/monit/monit.user\n"+
		"include /var/vcap/monit/job/*.monitrc\n", cycle, port), 0o600)
	r.write(filepath.Join(r.layout.Root(), "monit", "monit.user"), "vcap:random-password", 0o600)
	r.write(filepath.Join(r.layout.Root(), "monit", "job", "0000_web.monitrc"), strings.Join(checks, ""), 0o644)
	return monitAPI{t: r.t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

// shim is the bpm shim's check of JOB's process p, with more lines.
func shim(job, p string, more ...string) string {
	return fmt.Sprintf("check process %[2]s\n  with pidfile /var/vcap/sys/run/bpm/%[1]s/%[2]s.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start %[1]s -p %[2]s\"\n"+
		"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop %[1]s -p %[2]s\"\n  group vcap\n", job, p) + strings.Join(more, "")
}

func (a monitAPI) do(method, path, body string) (int, string) {
	a.t.Helper()
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

// service is a service's monitoring state and pending action, from the
// XML the agent reads.
func (a monitAPI) service(name string) (monitor, pending int) {
	a.t.Helper()
	code, body := a.do("GET", "/_status2?format=xml", "")
	if code != 200 {
		a.t.Fatalf("status: %d %s", code, body)
	}
	var doc struct {
		Services []struct {
			Name    string `xml:"name,attr"`
			Monitor int    `xml:"monitor"`
			Pending int    `xml:"pendingaction"`
		} `xml:"services>service"`
	}
	d := xml.NewDecoder(strings.NewReader(body))
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	if err := d.Decode(&doc); err != nil {
		a.t.Fatal(err)
	}
	for _, s := range doc.Services {
		if s.Name == name {
			return s.Monitor, s.Pending
		}
	}
	a.t.Fatalf("no service %s", name)
	return 0, 0
}

// TestMonitKillDuringStop: under the monit personality, the daemon dies
// mid-ladder of a `monit stop` (the agent's POST action=stop) of a process
// that ignores SIGTERM. The stop was recorded in monit.state as it was
// posted, before it ran; the next daemon adopts the process and finishes
// the stop (TERM again, then QUIT and the kill), and leaves the service
// stopped and not monitored, with nothing of it left, and the other
// service as it was.
func TestMonitKillDuringStop(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "steady", behaviour: "serve"},
		tp{name: "stubborn", behaviour: "serve", env: []string{testproc.EnvIgnore + "=TERM"}})
	api := r.monitrc(10, shim("web", "steady"), shim("web", "stubborn"))
	r.up(2, envStop+"=1h") // the ladder waits at SIGTERM until the daemon dies
	r.waitFor("both running", func() bool {
		return r.status("web", "steady").State == "running" && r.status("web", "stubborn").State == "running"
	})
	steady, before := r.once("web", "steady"), r.once("web", "stubborn")
	if code, body := api.do("POST", "/stubborn", "action=stop"); code != 200 {
		t.Fatalf("stop: %d %s", code, body)
	}
	if ln := r.rep.Expect(t, "signal"); ln.PID != before.ExecPID || ln.Text != "signal TERM" {
		t.Fatalf("first signal: %+v", ln)
	}
	kids := r.killDaemon()
	r.orphansSettle(kids)
	if got := r.instances("web", "stubborn"); len(got) != 1 || got[0] != before.ExecPID {
		t.Fatalf("after the kill: %v", got)
	}

	// The next daemon finishes the stop: the ladder again from TERM, QUIT
	// 1 s later (and 1 s for QUIT to be reported before the kill).
	r.up(0, envStop+"=1s")
	for _, sig := range []string{"signal TERM", "signal QUIT"} {
		if ln := r.rep.Expect(t, "signal"); ln.PID != before.ExecPID || ln.Text != sig {
			t.Fatalf("want %s to %d, got %+v", sig, before.ExecPID, ln)
		}
	}
	r.waitGone(before.PID)
	r.waitFor("the stop to settle", func() bool {
		monitor, pending := api.service("stubborn")
		return r.status("web", "stubborn").State == "stopped" && monitor == 0 && pending == 0
	})
	if got := r.instances("web", "stubborn"); len(got) != 0 || r.pidFile("web", "stubborn") != 0 {
		t.Fatalf("after the stop: instances %v, pid file %d", got, r.pidFile("web", "stubborn"))
	}
	r.same(steady)
	if monitor, _ := api.service("steady"); monitor == 0 {
		t.Fatal("steady is no longer monitored")
	}
	var st struct{ Unmonitored, Stopping []string }
	b, _ := os.ReadFile(filepath.Join(r.layout.VigilRunDir(), "monit.state"))
	if err := json.Unmarshal(b, &st); err != nil || fmt.Sprint(st.Unmonitored) != "[stubborn]" || len(st.Stopping) != 0 {
		t.Fatalf("monit.state: %s (%v)", b, err)
	}
	r.noZombies()
}

// clock serves the "/tick" a monit host check asks for at each cycle of
// the daemon, and counts them: a test waits for cycles without a clock.
func clock(t *testing.T) (port int, ticks <-chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := make(chan struct{}, 64)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case c <- struct{}{}:
		default:
		}
		fmt.Fprintln(w, "tick")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port, c
}

// TestMonitAdoptionIsNoRestart: a daemon killed outright leaves its
// processes; the next one adopts them, and taking a process over is not a
// restart: before, the engine saw the adopted process's first start as
// one (for a check process every time, the daemon's start adopting it only
// after the engine began; for a bpm process when its supervisor took it
// over after that), and restarted the services that depend on it at its
// first cycle. Each runs on, same pids, through several cycles.
func TestMonitAdoptionIsNoRestart(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "b", behaviour: "serve"}, tp{name: "c", behaviour: "serve"}, tp{name: "d", behaviour: "serve"})
	port, ticks := clock(t)
	pidPath := filepath.Join(r.layout.Root(), "sys", "run", "a", "a.pid")
	ctl := filepath.Join(r.layout.Root(), "jobs", "a", "bin", "ctl")
	var env strings.Builder
	for k, v := range r.rep.Env("serve") {
		fmt.Fprintf(&env, "%s=%q ", k, v)
	}
	r.write(ctl, "#!/bin/sh\nmkdir -p "+filepath.Dir(pidPath)+"\n"+
		env.String()+r.self+" "+r.mark+"/a/a >/dev/null 2>&1 &\necho $! > "+pidPath+"\n", 0o755)
	api := r.monitrc(1, fmt.Sprintf("check host clock with address 127.0.0.1\n"+
		"  if failed port %d protocol http request \"/tick\" then alert\n", port),
		"check process a with pidfile "+pidPath+"\n  start program \""+ctl+"\"\n",
		shim("web", "b", "  depends on a\n"), shim("web", "c"), shim("web", "d", "  depends on c\n"))
	r.up(3)
	r.waitFor("all four running", func() bool {
		for _, p := range []string{"a", "b", "c", "d"} {
			if monitor, _ := api.service(p); monitor != 1 {
				return false
			}
		}
		return true
	})
	before := map[string]int{}
	for _, p := range []string{"b", "c", "d"} {
		before[p] = r.once("web", p).ExecPID
	}
	aPID := r.instances("a", "a")
	kids := r.killDaemon()
	r.orphansSettle(kids)
	for len(ticks) > 0 {
		<-ticks
	}
	r.up(0)
	for range 3 { // three cycles of the next daemon
		<-ticks
	}
	for _, p := range []string{"b", "c", "d"} {
		if st := r.once("web", p); st.ExecPID != before[p] || st.Restarts != 0 {
			t.Errorf("%s was restarted: pid %d before, now %+v", p, before[p], st)
		}
	}
	if got := r.instances("a", "a"); fmt.Sprint(got) != fmt.Sprint(aPID) {
		t.Errorf("a: %v before, %v now", aPID, got)
	}
}
