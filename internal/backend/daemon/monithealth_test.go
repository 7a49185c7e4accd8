package daemon

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/supervise"
	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestMonitTestsEnforced: a monit file's `if failed port ... for 2
// cycles then restart` restarts the bpm process after two failed cycles,
// and an `if failed port ... then alert` sets the connection bit and
// monit's message in the status XML without restarting; both mail their
// event. The monit engine's cycles run them (the first at the cycle after
// the start, as monit's).
func TestMonitTestsEnforced(t *testing.T) {
	live := newSwitchServer(t)
	alertLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	alertPort := alertLn.Addr().(*net.TCPAddr).Port
	h := newHarness(t)
	port, mails := h.writeAlertingMonitrc(1)
	h.writeJob("web", pr{"server", "serve", nil})
	h.write("monit/job/0001_web.monitrc", fmt.Sprintf("check process web\n  with pidfile /var/vcap/sys/run/bpm/web/server.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p server\"\n"+
		"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p server\"\n  group vcap\n"+
		"  if failed host 127.0.0.1 port %d protocol http for 2 cycles then restart\n"+
		"  if failed host 127.0.0.1 port %d then alert\n", live.port, alertPort), 0o644)
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	// A cycle ran the tests when the alert test's connection arrives.
	conn, err := alertLn.Accept()
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	if st := api.service("web"); st.Status != 0 {
		t.Fatalf("healthy web: %+v", st)
	}
	alertLn.Close() // the alert test fails from now on
	h.waitFor("the alert", func() bool { return api.service("web").Status&0x20 != 0 })
	want := fmt.Sprintf("<status_message><![CDATA[failed, cannot open a connection to INET[127.0.0.1:%d] via TCP]]>", alertPort)
	if _, body := api.do("GET", "/_status2?format=xml", ""); !strings.Contains(body, want) {
		t.Fatalf("no %s in %s", want, body)
	}
	if st := h.status("web", "server"); st.Restarts != 0 || st.ExecPID != first.PID {
		t.Fatalf("an alert test restarted: %+v", st)
	}
	expectMail(t, mails, "Event: Connection failed\r\n", "Action: alert\r\n", "Service: web\r\n")
	live.set(true)
	h.rep.Expect(t, "signal TERM")
	if n := live.set(false); n != 2 {
		t.Fatalf("restarted after %d failed cycles, want 2", n)
	}
	expectMail(t, mails, "Event: Connection failed\r\n", "Action: restart\r\n")
}

// expectMail waits for the next alert mail and checks that it holds every
// line of want.
func expectMail(t *testing.T, mails <-chan string, want ...string) {
	t.Helper()
	select {
	case m := <-mails:
		for _, w := range want {
			if !strings.Contains(m, w) {
				t.Fatalf("alert lacks %q:\n%s", w, m)
			}
		}
	case <-time.After(testproc.Guard): // a failure guard only
		t.Fatal("no alert mail")
	}
}
