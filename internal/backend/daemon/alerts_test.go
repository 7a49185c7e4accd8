package daemon

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/supervise"
)

// mailSink accepts SMTP sessions on ln and sends each message body to got.
func mailSink(ln net.Listener, got chan<- string) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			r := bufio.NewReader(conn)
			say := func(s string) { fmt.Fprintf(conn, "%s\r\n", s) }
			say("220 agent")
			var body strings.Builder
			data := false
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				switch {
				case data && line == ".\r\n":
					data = false
					got <- body.String()
					body.Reset()
					say("250 ok")
				case data:
					body.WriteString(line)
				case strings.HasPrefix(strings.ToUpper(line), "DATA"):
					data = true
					say("354 go")
				case strings.HasPrefix(strings.ToUpper(line), "QUIT"):
					say("221 bye")
					return
				default:
					say("250 ok")
				}
			}
		}()
	}
}

// writeAlertingMonitrc writes the stemcell's monitrc with a cycle of cycle
// seconds, the HTTP API on a free port and alerts mailed to a sink that
// lives as long as the test, and the API's credentials; it returns the
// API's port and the mails as they arrive.
func (h *harness) writeAlertingMonitrc(cycle int) (port int, mails <-chan string) {
	mail, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { mail.Close() })
	got := make(chan string, 8)
	go mailSink(mail, got)
	port = freePort(h.t)
	h.write("bosh/etc/monitrc", fmt.Sprintf("set daemon %d\nset httpd port %d and use address 127.0.0.1\n"+
		"  allow cleartext /var/vcap/monit/monit.user\nset alert agent@local\n"+
		"set mailserver 127.0.0.1 port %d with timeout 15 seconds\ninclude /var/vcap/monit/job/*.monitrc\n",
		cycle, port, mail.Addr().(*net.TCPAddr).Port), 0o600)
	h.write("monit/monit.user", "vcap:random-password", 0o600)
	return port, got
}

// TestMonitAlerts: the exit of a supervised service reaches the agent's
// SMTP listener as monit's "Does not exist" alert.
func TestMonitAlerts(t *testing.T) {
	h := newHarness(t)
	_, mails := h.writeAlertingMonitrc(10)
	h.writeJob("web", pr{"server", "serve", nil})
	h.write("monit/job/0000_web.monitrc", "check process web-server\n  with pidfile /var/vcap/sys/run/bpm/web/server.pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start web -p server\"\n"+
		"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop web -p server\"\n  group vcap\n", 0o644)
	h.start(supervise.Timing{})
	first := h.rep.Expect(t, "ready")
	unix.Kill(first.PID, unix.SIGKILL)
	h.rep.Expect(t, "ready")
	expectMail(t, mails, "Service: web-server\r\n", "Event: Does not exist\r\n", "Action: restart\r\n")
}
