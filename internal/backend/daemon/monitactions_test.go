package daemon

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// shimCheck is the monit check the bpm shim makes of JOB's process server.
func shimCheck(job string) string {
	return fmt.Sprintf("check process %[1]s\n  with pidfile /var/vcap/sys/run/bpm/%[1]s/server.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start %[1]s -p server\"\n"+
		"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop %[1]s -p server\"\n  group vcap\n", job)
}

// TestMonitStopDoesNotWaitForOtherLadders: as the agent drives an update
// (stop a job, then start it at once) while two other services are in
// slow stop ladders (their processes ignore SIGTERM, and the ladder waits
// an hour at it): the job's stop runs at once instead of queueing behind
// theirs, the API answers 503 only for a service that has an action
// pending, and the start that follows is taken and runs.
func TestMonitStopDoesNotWaitForOtherLadders(t *testing.T) {
	h := newHarness(t)
	for _, j := range []string{"slow1", "slow2"} {
		h.writeJob(j, pr{"server", "serve", []string{testproc.EnvIgnore + "=TERM"}})
	}
	h.writeJob("web", pr{"server", "serve", nil})
	port := freePort(t)
	h.writeMonitrc(10, port)
	// One file, in this order: monit's order runs slow1 and slow2 first.
	h.write("monit/job/0000_all.monitrc", shimCheck("slow1")+shimCheck("slow2")+shimCheck("web"), 0o644)
	h.leaveRunning = true // the shutdown leaves the ladders; the root's cleanup kills the rest
	h.start(supervise.Timing{StopTimeout: time.Hour})
	ready := map[int]bool{}
	for range 3 {
		ready[h.rep.Expect(t, "ready").PID] = true
	}
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	h.waitFor("all three running", func() bool {
		return api.service("slow1").Monitor == 1 && api.service("slow2").Monitor == 1 && api.service("web").Monitor == 1
	})
	web := h.status("web", "server")
	for _, s := range []string{"slow1", "slow2"} {
		if code, body := api.do("POST", "/"+s, "action=stop"); code != 200 {
			t.Fatalf("stop %s: %d %s", s, code, body)
		}
	}
	for range 2 { // both ladders are under way: SIGTERM sent, ignored
		if ln := h.rep.Expect(t, "signal"); ln.Text != "signal TERM" || !ready[ln.PID] || ln.PID == web.ExecPID {
			t.Fatalf("signal %+v", ln)
		}
	}
	if code, body := api.do("POST", "/web", "action=stop"); code != 200 {
		t.Fatalf("stop web: %d %s", code, body)
	}
	if code, body := api.do("POST", "/slow1", "action=start"); code != 503 || body != "Other action already in progress -- please try again later\n" {
		t.Fatalf("a second action on slow1, whose stop is pending: %d %q", code, body)
	}
	h.waitFor("web stopped", func() bool {
		st := api.service("web")
		return st.Pending == 0 && st.Monitor == 0 && h.status("web", "server").State == "stopped"
	})
	for _, s := range []string{"slow1", "slow2"} {
		if st := api.service(s); st.Pending != 3 { // monit's code for a stop pending
			t.Fatalf("%s: %+v: its ladder should still wait at SIGTERM", s, st)
		}
	}
	// The agent's start, at once: not 503, and it runs.
	if code, body := api.do("POST", "/web", "action=start"); code != 200 {
		t.Fatalf("start web: %d %s", code, body)
	}
	again := h.rep.Expect(t, "ready")
	h.waitFor("web running again", func() bool {
		st := api.service("web")
		return st.Pending == 0 && st.Monitor == 1 && st.Status == 0 && st.PID == again.PID // running, as the agent reads it
	})
}
