package monit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// FuzzHTTP sends arbitrary requests to the agent's HTTP API: it must never
// panic nor fail with a server error (503, monit's "pending", excepted), and
// must refuse a request without valid credentials.
func FuzzHTTP(f *testing.F) {
	for _, c := range []struct {
		method, target, body string
		auth                 bool
	}{
		{"GET", "/_status2?format=xml", "", true},
		{"GET", "/_status?format=text&level=summary", "", true},
		{"POST", "/web", "action=start", true},
		{"POST", "/api", "action=unmonitor", true},
		{"POST", "/nope", "action=stop", true},
		{"POST", "/web", "action=explode", true},
		{"POST", "/web", "action=start", false},
		{"GET", "/%2e%2e/etc/passwd", "", true},
		{"DELETE", "/web", "", true},
		{"POST", "/web", strings.Repeat("a=b&", 3000), true},
	} {
		f.Add(c.method, c.target, c.body, c.auth)
	}
	parsed, err := monitrc.Parse("jobs.monitrc", []byte(chain))
	if err != nil {
		f.Fatal(err)
	}
	cfg := &monitrc.Config{File: "monitrc", Cycle: 10 * time.Second, Services: parsed.Services,
		HTTPD: &monitrc.HTTPD{Port: 2822, Address: "127.0.0.1", Users: []monitrc.Credential{{User: "vcap", Password: "pw"}}}}
	units := map[string]Unit{}
	for _, s := range parsed.Services {
		units[s.Name] = &fakeUnit{name: s.Name, log: &callLog{}}
	}
	srv, err := NewServer(NewEngine(cfg, units, t0, 1, nil), func() time.Time { return t0 })
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, target, body string, auth bool) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\t") || method == "" ||
			strings.ContainsAny(method, " \r\n\t/()<>@,;:\\\"[]?={}") {
			return // not an HTTP request at all
		}
		req, err := http.NewRequest(method, "http://127.0.0.1:2822"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if auth {
			req.SetBasicAuth("vcap", "pw")
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body)
		}
		if !auth && rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s %s without credentials: %d", method, target, rec.Code)
		}
	})
}
