package daemon

import (
	"encoding/xml"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// agentView is what the BOSH agent's monit client takes from
// _status2?format=xml (its jobsupervisor/monit status), decoded and
// judged as it judges it, in our own code: CI cannot fetch the agent.
type agentView struct {
	Incarnation string `xml:"incarnation,attr"`
	Services    []struct {
		Name    string `xml:"name,attr"`
		Status  int    `xml:"status"`
		Message string `xml:"status_message"`
		Monitor int    `xml:"monitor"`
		Pending int    `xml:"pendingaction"`
	} `xml:"services>service"`
	Groups []struct {
		Name     string   `xml:"name,attr"`
		Services []string `xml:"service"`
	} `xml:"servicegroups>servicegroup"`
}

// agentRead reads the status as the agent does: basic auth, the XML
// decoded with a charset reader (monit says ISO-8859-1).
func agentRead(t *testing.T, api monitAPI) agentView {
	t.Helper()
	code, body := api.do("GET", "/_status2?format=xml", "")
	if code != 200 {
		t.Fatalf("status: %d %s", code, body)
	}
	var v agentView
	d := xml.NewDecoder(strings.NewReader(body))
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // ASCII here
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if _, err := strconv.Atoi(v.Incarnation); err != nil {
		t.Fatalf("incarnation %q: %v", v.Incarnation, err)
	}
	return v
}

// processes are the agent's process states of group vcap's services:
// not monitored is unknown, initializing starting, no failed event
// running, any other failing.
func (v agentView) processes() map[string]string {
	var vcap []string
	for _, g := range v.Groups {
		if g.Name == "vcap" {
			vcap = g.Services
		}
	}
	out := map[string]string{}
	for _, s := range v.Services {
		if !slices.Contains(vcap, s.Name) {
			continue
		}
		switch {
		case s.Monitor == 0:
			out[s.Name] = "unknown"
		case s.Monitor == 2:
			out[s.Name] = "starting"
		case s.Status == 0:
			out[s.Name] = "running"
		default:
			out[s.Name] = "failing"
		}
	}
	return out
}

// job is the agent's aggregate job state: starting while any service is,
// failing while any other is not running, else running.
func (v agentView) job() string {
	ps := v.processes()
	for _, st := range ps {
		if st == "starting" {
			return "starting"
		}
	}
	for _, st := range ps {
		if st != "running" {
			return "failing"
		}
	}
	return "running"
}

// TestMonitBootIsNotHeldByAFailingCheck: issue 34's four checks, a, b
// (depends on a) and c run through the bpm shim, and x, a check whose
// start program never writes its pid file (its start fails after its
// timeout). The daemon says it supervises at once, without waiting for x;
// a, b and c read running as soon as they run (b once a does), long
// before the next cycle (a minute away); x reads initializing until its
// start gives up, then monit's failed start (Execution failed,
// monitored). Read as the BOSH agent reads it throughout.
func TestMonitBootIsNotHeldByAFailingCheck(t *testing.T) {
	h := newHarness(t)
	port := freePort(t)
	h.writeMonitrc(60, port)
	for _, p := range []string{"a", "b", "c"} {
		h.writeJob(p, pr{"server", "serve", nil})
	}
	shim := shimCheck("a") + shimCheck("b") + "  depends on a\n" + shimCheck("c")
	h.write("monit/job/0000_four.monitrc", shim+"check process x with pidfile /var/vcap/sys/run/x/x.pid\n"+
		"  start program \"/bin/true\" with timeout 10 seconds\n  stop program \"/bin/true\"\n  group vcap\n", 0o644)
	h.start(supervise.Timing{})
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	v := agentRead(t, api)
	if ps := v.processes(); ps["x"] != "starting" || v.job() != "starting" {
		t.Fatalf("as the daemon says it supervises: %v, job %s", ps, v.job())
	}
	ready := map[int]bool{}
	for range 3 {
		ready[h.rep.Expect(t, "ready").PID] = true
	}
	h.waitFor("a, b and c running", func() bool {
		ps := agentRead(t, api).processes()
		return ps["a"] == "running" && ps["b"] == "running" && ps["c"] == "running"
	})
	v = agentRead(t, api)
	if ps := v.processes(); ps["x"] != "starting" || v.job() != "starting" {
		t.Fatalf("x's start should still be waiting for its pid file: %v", ps)
	}
	for _, p := range []string{"a", "b", "c"} {
		if st := api.service(p); !ready[st.PID] || st.Monitor != 1 || st.Status != 0 {
			t.Fatalf("%s: %+v", p, st)
		}
	}
	_, summary := api.do("GET", "/_status?format=text&level=summary", "")
	for _, p := range []string{"a", "b", "c"} {
		if !strings.Contains(summary, "\nProcess '"+p+"'                         running\n") {
			t.Fatalf("summary:\n%s", summary)
		}
	}
	h.waitFor("x failed", func() bool { return agentRead(t, api).processes()["x"] == "failing" })
	v = agentRead(t, api)
	for _, s := range v.Services {
		if s.Name == "x" && (s.Status&0x1000 == 0 || s.Monitor != 1 || s.Message == "") {
			t.Fatalf("x: %+v", s)
		}
	}
	if ps := v.processes(); ps["a"] != "running" || ps["b"] != "running" || ps["c"] != "running" || v.job() != "failing" {
		t.Fatalf("once x failed: %v, job %s", ps, v.job())
	}
	_, summary = api.do("GET", "/_status?format=text&level=summary", "")
	if !strings.Contains(summary, "\nProcess 'x'                         Execution failed\n") {
		t.Fatalf("summary:\n%s", summary)
	}
}
