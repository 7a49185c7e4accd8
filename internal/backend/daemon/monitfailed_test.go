package daemon

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// TestMonitCheckOfABrokenJob: a check process whose bpm.yml is invalid
// reads as monit with bpm shows a start that fails, monitored and
// "Execution failed" (the agent's "failing", not "unknown"), with monit's
// alert; a start asked for fails the same way and mails again after a
// stop; the healthy job beside it runs.
func TestMonitCheckOfABrokenJob(t *testing.T) {
	h := newHarness(t)
	port, mails := h.writeAlertingMonitrc(10)
	h.writeJob("web", pr{"server", "serve", nil})
	h.write("jobs/broken/config/bpm.yml", "processes:\n- name: broken\n  executable: /var/vcap/packages/none/bin/missing\n", 0o644)
	for i, jp := range [][2]string{{"broken", "broken"}, {"web", "server"}} {
		job, proc := jp[0], jp[1]
		h.write(fmt.Sprintf("monit/job/%04d_%s.monitrc", i, job), "check process "+job+"\n"+
			"  with pidfile /var/vcap/sys/run/bpm/"+job+"/"+proc+".pid\n"+
			"  start program \"/var/vcap/jobs/bpm/bin/bpm start "+job+" -p "+proc+"\"\n"+
			"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop "+job+" -p "+proc+"\"\n  group vcap\n", 0o644)
	}
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	failed := func() bool {
		st := api.service("broken")
		return st.Monitor == 1 && st.Status == monit.EventExec && st.Pending == 0 && st.PID == 0
	}
	if !failed() {
		t.Fatalf("broken: %+v, want monitored with Execution failed", api.service("broken"))
	}
	if st := api.service("web"); st.Monitor != 1 || st.Status != 0 || st.PID == 0 {
		t.Fatalf("web: %+v", st)
	}
	alert := []string{"Service: broken\r\n", "Event: Execution failed\r\n", "Action: alert\r\n",
		"Description: failed to start: no valid bpm.yml defines bpm process broken/broken\r\n"}
	expectMail(t, mails, alert...)
	if code, body := api.do("POST", "/broken", "action=stop"); code != 200 {
		t.Fatalf("stop: %d %s", code, body)
	}
	h.waitFor("broken not monitored", func() bool { st := api.service("broken"); return st.Monitor == 0 && st.Status == 0 })
	if code, body := api.do("POST", "/broken", "action=start"); code != 200 {
		t.Fatalf("start: %d %s", code, body)
	}
	h.waitFor("broken failed again", failed)
	expectMail(t, mails, alert...)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
}
