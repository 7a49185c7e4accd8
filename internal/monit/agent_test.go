package monit

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// agentStatus is the shape the BOSH agent decodes (jobsupervisor/monit/status.go).
type agentStatus struct {
	XMLName     xml.Name `xml:"monit"`
	Incarnation string   `xml:"incarnation,attr"`
	Services    struct {
		Services []struct {
			Name          string `xml:"name,attr"`
			Status        int    `xml:"status"`
			StatusMessage string `xml:"status_message"`
			Monitor       int    `xml:"monitor"`
			Pending       int    `xml:"pendingaction"`
			Uptime        int    `xml:"uptime"`
			Memory        struct {
				PercentTotal  float64 `xml:"percenttotal"`
				KilobyteTotal int     `xml:"kilobytetotal"`
			} `xml:"memory"`
			CPU struct {
				PercentTotal float64 `xml:"percenttotal"`
			} `xml:"cpu"`
		} `xml:"service"`
	} `xml:"services"`
	ServiceGroups struct {
		ServiceGroup []struct {
			Name     string   `xml:"name,attr"`
			Services []string `xml:"service"`
		} `xml:"servicegroup"`
	} `xml:"servicegroups"`
}

// latin1Reader is the charset handling the agent's decoder does.
func latin1Reader(label string, in io.Reader) (io.Reader, error) {
	if !strings.EqualFold(label, "ISO-8859-1") {
		return nil, fmt.Errorf("charset %s", label)
	}
	b, err := io.ReadAll(in)
	if err != nil {
		return nil, err
	}
	var out strings.Builder
	for _, c := range b {
		out.WriteRune(rune(c))
	}
	return strings.NewReader(out.String()), nil
}

// agent makes exactly the agent's calls.
type agent struct {
	base, user, pass string
}

func (a agent) do(method, path, body string) (int, string) {
	req, _ := http.NewRequest(method, a.base+path, strings.NewReader(body))
	req.SetBasicAuth(a.user, a.pass)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (a agent) status(t *testing.T) agentStatus {
	t.Helper()
	code, body := a.do("GET", "/_status2?format=xml", "")
	if code != 200 {
		t.Fatalf("status: %d %s", code, body)
	}
	var st agentStatus
	d := xml.NewDecoder(bytes.NewReader([]byte(body)))
	d.CharsetReader = latin1Reader
	if err := d.Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func serve(t *testing.T, e *Engine) string {
	t.Helper()
	srv, err := NewServer(e, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + ln.Addr().String()
}

func TestAgentCalls(t *testing.T) {
	e, fakes, _ := fixture(t, chain)
	// Credentials come from the cleartext file the agent writes.
	userFile := filepath.Join(t.TempDir(), "monit.user")
	if err := os.WriteFile(userFile, []byte("vcap:random-password"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.cfg.HTTPD = &monitrc.HTTPD{Port: 2822, Address: "127.0.0.1", Cleartext: []string{userFile}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	base := serve(t, e)
	a := agent{base: base, user: "vcap", pass: "random-password"}

	if code, _ := (agent{base: base, user: "vcap", pass: "wrong"}).do("GET", "/_status2?format=xml", ""); code != 401 {
		t.Fatalf("bad password: %d", code)
	}
	if code, _ := (agent{base: base}).do("GET", "/_status2?format=xml", ""); code != 401 {
		t.Fatalf("no credentials: %d", code)
	}
	st := a.status(t)
	if st.Incarnation != "1764464523" || len(st.Services.Services) != 5 { // with monit's own system service
		t.Fatalf("status: %+v", st)
	}
	vcap := st.ServiceGroups.ServiceGroup[0]
	if vcap.Name != "vcap" || strings.Join(vcap.Services, ",") != "web,api,db" {
		t.Fatalf("groups: %+v", st.ServiceGroups)
	}
	// Start(): POST action=start for each vcap service, in group order.
	fakes["db"].gate = make(chan struct{})
	for _, name := range vcap.Services {
		if code, body := a.do("POST", "/"+name, "action=start"); code != 200 {
			t.Fatalf("start %s: %d %s", name, code, body)
		}
	}
	if code, body := a.do("POST", "/web", "action=stop"); code != 503 ||
		body != "Other action already in progress -- please try again later\n" {
		t.Fatalf("pending: %d %q", code, body)
	}
	if p := a.status(t).Services.Services[2].Pending; p != PendingStart {
		t.Fatalf("pending action %d", p)
	}
	close(fakes["db"].gate)
	waitFor(t, a, func(st agentStatus) bool {
		for _, s := range st.Services.Services {
			if s.Pending != 0 {
				return false
			}
		}
		return true
	})
	if code, body := a.do("POST", "/nope", "action=stop"); code != 404 || body != "There is no service by that name\n" {
		t.Fatalf("unknown: %d %q", code, body)
	}
	if code, body := a.do("POST", "/db", "action=fly"); code != 400 || body != "Invalid action\n" {
		t.Fatalf("bad action: %d %q", code, body)
	}
	// Unmonitor(), then StopAndWait's wait for nothing monitored.
	for _, name := range vcap.Services {
		if code, _ := a.do("POST", "/"+name, "action=unmonitor"); code != 200 {
			t.Fatal(code)
		}
	}
	waitFor(t, a, func(st agentStatus) bool {
		for _, s := range st.Services.Services[:3] {
			if s.Monitor != 0 || s.Pending != 0 {
				return false
			}
		}
		return true
	})
	if code, body := a.do("GET", "/_status?format=text&level=summary", ""); code != 200 ||
		!strings.Contains(body, "Process 'db'                        not monitored\n") {
		t.Fatalf("summary: %d %s", code, body)
	}
	big := strings.Repeat("x", 10000)
	if code, _ := a.do("POST", "/db", "action=stop&pad="+big); code != 400 {
		t.Fatalf("oversized body: %d", code)
	}
}

// waitFor polls as the agent does (every 500ms there; at each change here).
func waitFor(t *testing.T, a agent, ok func(agentStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !ok(a.status(t)) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached: %+v", a.status(t))
		}
		<-tick.C
	}
}
