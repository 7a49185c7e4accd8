package guest

import (
	"encoding/xml"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The BOSH agent's reading of the monit status (bosh-agent
// jobsupervisor/monit/status.go): per service its pending action, status
// and monitor flag, from which get_state says running, starting, failing
// or unknown, and StopAndWait decides a stop is over.
type agentService struct {
	Name    string `xml:"name,attr"`
	Pending int    `xml:"pendingaction"`
	Status  int    `xml:"status"`
	Monitor int    `xml:"monitor"`
}

// state is the service's process state as get_state reports it.
func (s agentService) state() string {
	switch {
	case s.Monitor == 0:
		return "unknown"
	case s.Monitor == 2:
		return "starting"
	case s.Status == 0:
		return "running"
	}
	return "failing"
}

// agentStatus reads the monit status as the agent does.
func agentStatus(t *testing.T) map[string]agentService {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:2822/_status2?format=xml", nil)
	req.SetBasicAuth("vcap", "random-password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the monit status: %v", err)
	}
	defer resp.Body.Close()
	var st struct {
		Services []agentService `xml:"services>service"`
	}
	d := xml.NewDecoder(resp.Body)
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	if err := d.Decode(&st); err != nil {
		t.Fatalf("the monit status: %v", err)
	}
	out := map[string]agentService{}
	for _, s := range st.Services {
		out[s.Name] = s
	}
	return out
}

// agentRun: the agent's calls for one instance's deploy after the apply,
// in the order and at the pace the real agent made them on Noble
// (COMPATIBILITY, "The real BOSH agent driving a deploy"): its start (a
// reload, then action=start for each service of group vcap), get_state
// until running, drain (action=unmonitor), the director's stop
// (StopAndWait: monit stop -g vcap, then a read every 500 ms until no
// service is monitored or pending), start again, drain shutdown and stop
// again; the job is left running, as a deploy leaves it. The agent's
// reading must be the truth: running when the process runs, stopped only
// once it has exited.
func agentRun(t *testing.T) {
	const job = "sig"
	agentDrain(t, job) // the deploy's start was deploy's
	stopToStopped := agentStopAndWait(t, job)
	startToRunning := agentStart(t, job)
	agentDrain(t, job)
	agentStopAndWait(t, job)
	agentStart(t, job)
	t.Logf("vmrig: the agent's stop to stopped %s, its start (the reload included) to running %s",
		stopToStopped.Round(time.Millisecond), startToRunning.Round(time.Millisecond))
}

// agentStart is the agent's start: a reload of monit, action=start for
// the service, then get_state's reads (the driver asks every 100 ms)
// until it says running; it returns the time from the reload to that.
func agentStart(t *testing.T, job string) time.Duration {
	t.Helper()
	began := time.Now()
	agentReload(t)
	post(t, "http://127.0.0.1:2822/"+job, "action=start")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for range 600 {
		s := agentStatus(t)[job]
		if s.state() == "running" {
			took := time.Since(began)
			p, _ := processOf(status(t, sock), job, procOf(job))
			if p.State != "running" || !alive(p.ExecPID) {
				t.Fatalf("the agent reads %s running; vigil says %+v", job, p)
			}
			return took
		}
		<-tick.C // get_state's next ask
	}
	t.Fatalf("%s never read running: %+v", job, agentStatus(t)[job])
	return 0
}

// agentDrain is the drain's first act: action=unmonitor for the service;
// the agent then reads it unknown, and the process runs on, unsignalled.
func agentDrain(t *testing.T, job string) {
	t.Helper()
	before, _ := processOf(status(t, sock), job, procOf(job))
	post(t, "http://127.0.0.1:2822/"+job, "action=unmonitor")
	if s := agentStatus(t)[job]; s.state() != "unknown" || s.Pending != 0 {
		t.Errorf("after the drain's unmonitor the agent reads %+v (%s), want unknown, nothing pending", s, s.state())
	}
	if after, _ := processOf(status(t, sock), job, procOf(job)); after.ExecPID != before.ExecPID || !alive(after.ExecPID) {
		t.Errorf("the drain's unmonitor touched the process: %d → %d", before.ExecPID, after.ExecPID)
	}
}

// agentStopAndWait is the director's stop (protocol 3): no pending action
// first, monit stop -g vcap, then a read every 500 ms until no service is
// monitored or pending, when the process must be gone; it returns the
// time from the stop's start to that read.
func agentStopAndWait(t *testing.T, job string) time.Duration {
	t.Helper()
	began := time.Now()
	p, _ := processOf(status(t, sock), job, procOf(job))
	if s := agentStatus(t)[job]; s.Pending != 0 {
		t.Fatalf("a pending action before the stop: %+v", s)
	}
	if out, err := exec.Command(vcap+"/bosh/bin/monit", "stop", "-g", "vcap").CombinedOutput(); err != nil {
		t.Fatalf("monit stop -g vcap: %v %s", err, out)
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for range 600 {
		s := agentStatus(t)[job]
		if s.Monitor == 0 && s.Pending == 0 {
			if alive(p.ExecPID) {
				t.Fatalf("the agent reads %s stopped while its process %d runs", job, p.ExecPID)
			}
			if log := readTrim(t, vcap+"/sys/log/"+job+"/"+procOf(job)+".stdout.log"); !strings.HasSuffix(log, "got TERM") {
				t.Errorf("%s's process did not end on bpm's TERM:\n%s", job, log)
			}
			return time.Since(began)
		}
		<-tick.C // StopAndWait's next read
	}
	t.Fatalf("%s never read stopped: %+v", job, agentStatus(t)[job])
	return 0
}
