package web

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsOnly: the metrics-only server serves GET /metrics and
// nothing else (no page, no action, no log), without credentials when it
// has none and behind its own when it has some; its listener stays on
// loopback unless told otherwise.
func TestMetricsOnly(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "vigil_up 1\n") })
	get := func(ts *httptest.Server, method, path, user, pass string) (int, string) {
		t.Helper()
		var auth []string
		if user != "" {
			auth = []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}
		}
		return request(t, ts, method, path, nil, false, auth...)
	}
	open, err := NewMetricsServer(metrics, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(open)
	defer ts.Close()
	if code, body := get(ts, "GET", "/metrics", "", ""); code != http.StatusOK || body != "vigil_up 1\n" {
		t.Fatalf("open metrics: %d %q", code, body)
	}
	for _, path := range []string{"/", "/events", "/logs/app/server", "/v1/status", "/action", "/metrics/x"} {
		if code, _ := get(ts, "GET", path, "", ""); code != http.StatusNotFound {
			t.Errorf("GET %s on the metrics listener: %d", path, code)
		}
	}
	if code, _ := get(ts, "POST", "/metrics", "", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: %d", code)
	}

	file := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(file, []byte("prometheus:scrape-me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := OpenMetrics(metrics, "127.0.0.1:0", false, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Listener.Close()
	closed := httptest.NewServer(p.Server)
	defer closed.Close()
	for _, c := range [][2]string{{"", ""}, {"prometheus", "wrong"}, {testUser, testPassword}} {
		if code, _ := get(closed, "GET", "/metrics", c[0], c[1]); code != http.StatusUnauthorized {
			t.Errorf("metrics as %q: %d", c[0], code)
		}
	}
	if code, _ := get(closed, "GET", "/metrics", "prometheus", "scrape-me"); code != http.StatusOK {
		t.Errorf("metrics with their credentials: %d", code)
	}
	if _, err := OpenMetrics(metrics, "0.0.0.0:0", false, "", nil); err == nil || !strings.Contains(err.Error(), "--metrics-allow-remote") {
		t.Errorf("a remote address without leave: %v", err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenMetrics(metrics, "127.0.0.1:0", false, file, nil); err == nil {
		t.Error("a credentials file others can read was taken")
	}
}
