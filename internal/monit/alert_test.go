package monit

import (
	"bufio"
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// smtpSink is a minimal SMTP server that hands each message body to got.
func smtpSink(t *testing.T, ln net.Listener, got chan<- string) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			r := bufio.NewReader(conn)
			say := func(s string) { conn.Write([]byte(s + "\r\n")) }
			say("220 localhost ESMTP")
			var data strings.Builder
			inData := false
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if inData {
					if line == ".\r\n" {
						inData = false
						got <- data.String()
						data.Reset()
						say("250 ok")
						continue
					}
					data.WriteString(line)
					continue
				}
				switch cmd := strings.ToUpper(strings.Fields(line + " x")[0]); cmd {
				case "EHLO", "HELO", "MAIL", "RCPT", "RSET", "NOOP":
					say("250 ok")
				case "DATA":
					inData = true
					say("354 go ahead")
				case "QUIT":
					say("221 bye")
					return
				default:
					say("502 no")
				}
			}
		}()
	}
}

// TestAlertsQueueWhileDown: alerts made while the mail server is down
// wait on disk and are delivered in order once it listens; the queue is
// bounded.
func TestAlertsQueueWhileDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the agent is down
	dir := t.TempDir()
	a := NewAlerter(AlertConfig{Dir: dir, Max: 2, Server: addr, To: []string{"agent@local"},
		Hostname: "vm-1", Retry: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	for i, svc := range []string{"dropped", "nats", "web"} {
		a.Send(Alert{Service: svc, Event: "Does not exist", Action: "restart",
			Description: "process is not running", Date: at.Add(time.Duration(i) * time.Second)})
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ents, _ := os.ReadDir(dir)
		if len(ents) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d", len(ents))
		}
		<-tick.C
	}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port taken meanwhile: %v", err)
	}
	defer ln.Close()
	got := make(chan string, 4)
	go smtpSink(t, ln, got)
	for _, svc := range []string{"nats", "web"} {
		select {
		case m := <-got:
			for _, want := range []string{"Service: " + svc + "\r\n", "Event: Does not exist\r\n", "Action: restart\r\n",
				"Description: process is not running\r\n", "Subject: Monit Alert\r\n", "Message-id: <"} {
				if !strings.Contains(m, want) {
					t.Fatalf("mail lacks %q:\n%s", want, m)
				}
			}
			if !strings.Contains(m, "Date: Mon, 30 Nov 2026 01:02:0") {
				t.Fatalf("date:\n%s", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no mail for %s", svc)
		}
	}
}
