package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/internal/metrics/metricstest"
	"github.com/vigil-bosh/vigil/internal/web"
)

// TestHTTPFlagsRefused: a page on a non-loopback address, or page flags
// without --http, are refused before anything starts.
func TestHTTPFlagsRefused(t *testing.T) {
	c := newCLI(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "0.0.0.0:0"}, "--http-allow-remote"},
		{[]string{"--http", ":0"}, "is not loopback"},
		{[]string{"--http-credentials", "/etc/passwd"}, "need --http"},
		{[]string{"--http", "127.0.0.1:0", "--http-credentials", filepath.Join(c.root, "missing")}, "no such file"},
		{[]string{"--metrics", "0.0.0.0:0"}, "--metrics-allow-remote"},
		{[]string{"--metrics-credentials", "/etc/passwd"}, "need --metrics"},
		{[]string{"--metrics-allow-remote"}, "need --metrics"},
		{[]string{"--metrics", "127.0.0.1:0", "--metrics-credentials", filepath.Join(c.root, "missing")}, "no such file"},
	} {
		out, code := c.run(append([]string{"daemon", "--backend", "native"}, tt.args...)...)
		if code == 0 || !strings.Contains(out, tt.want) {
			t.Errorf("%v: exit %d, want %q in:\n%s", tt.args, code, tt.want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(c.root, "sys", "run", "vigil", "vigil.sock")); err == nil {
		t.Fatal("a refused daemon created its socket")
	}
}

var pageURL = regexp.MustCompile(`msg="status page" url=(\S+) credentials=(\S+)`)

// TestDaemonServesThePage: --http without credentials generates them into
// a 0600 file, logs its path (not the password), and serves the page
// behind them until the daemon ends.
func TestDaemonServesThePage(t *testing.T) {
	c := newCLI(t)
	m, log := daemonLogging(t, c, pageURL, "--http", "127.0.0.1:0")
	if m == nil {
		t.Fatalf("no status page logged:\n%s", log)
	}
	url, credPath := m[1], m[2]
	fi, err := os.Lstat(credPath)
	if err != nil || fi.Mode() != 0o600 || credPath != filepath.Join(c.root, "sys", "run", "vigil", "http-credentials") {
		t.Fatalf("credentials %s: %v %v", credPath, fi, err)
	}
	creds, err := web.ReadCredentials(credPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log, creds[0].Password) {
		t.Fatal("the daemon logged the password")
	}
	get := func(user, pass string, path ...string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", url+strings.Join(path, ""), nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get("", ""); code != http.StatusUnauthorized {
		t.Fatalf("without credentials: %d", code)
	}
	if code, page := get(creds[0].User, creds[0].Password); code != http.StatusOK || !strings.Contains(page, `data-job="web" data-process="a"`) {
		t.Fatalf("with credentials: %d\n%s", code, page)
	}
	// The Prometheus metrics on the same listener, behind the same
	// credentials, fed by the daemon: its process is up, and the status
	// request made above went through the control API's observer.
	if code, _ := get("", "", "metrics"); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without credentials: %d", code)
	}
	c.status() // through the control socket, as `vigil status --json`
	fams := metricstest.Scrape(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		code, body := get(creds[0].User, creds[0].Password, "metrics")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	if up, ok := metricstest.Value(fams, "vigil_process_up", "bosh_job", "web", "bosh_process", "a"); !ok || up != 1 {
		t.Fatalf("vigil_process_up{web/a} = %v (present %v)", up, ok)
	}
	if n, _ := metricstest.Value(fams, "vigil_control_request_duration_seconds", "route", "GET /v1/status"); n < 1 {
		t.Fatalf("control API requests observed: %v", n)
	}
}

var metricsURL = regexp.MustCompile(`msg=metrics url=(\S+) credentials=(\S+)`)

// TestDaemonServesMetricsAlone: --metrics without credentials serves the
// daemon's metrics, labelled for a fleet, to a scrape without any, and
// nothing else on that listener; no status page is served.
func TestDaemonServesMetricsAlone(t *testing.T) {
	c := newCLI(t)
	m, log := daemonLogging(t, c, metricsURL, "--metrics", "127.0.0.1:0")
	if m == nil || m[2] != "none" || strings.Contains(log, "status page") {
		t.Fatalf("metrics %q in:\n%s", m, log)
	}
	url := m[1]
	fams := metricstest.Scrape(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	if up, ok := metricstest.Value(fams, "vigil_process_up", "bosh_job", "web", "bosh_process", "a"); !ok || up != 1 {
		t.Fatalf("vigil_process_up{web/a} = %v (present %v)", up, ok)
	}
	if v, ok := metricstest.Value(fams, "vigil_build_info", "backend", "native"); !ok || v != 1 {
		t.Fatalf("vigil_build_info = %v (present %v)", v, ok)
	}
	res, err := http.Get(strings.TrimSuffix(url, "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("the page on the metrics listener: %s", res.Status)
	}
}

// daemonLogging starts vigil daemon on c's root with more args (the
// native back end, isolation off) and reads its log until it supervises;
// it returns the submatches of re in the first line that matched (nil for
// none) and the log so far. The daemon is ended (SIGTERM) when the test
// ends, and must exit 0.
func daemonLogging(t *testing.T, c *cli, re *regexp.Regexp, args ...string) ([]string, string) {
	t.Helper()
	cmd := exec.Command(vigilBin, append([]string{"daemon", "--root", c.root, "--backend", "native"}, args...)...)
	cmd.Env = append(os.Environ(), "VIGIL_ISOLATION=off")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		io.Copy(io.Discard, stderr)
		if err := cmd.Wait(); err != nil {
			t.Errorf("daemon exited with %v", err)
		}
	})
	var logged strings.Builder
	var m []string
	for sc := bufio.NewScanner(stderr); sc.Scan(); {
		logged.WriteString(sc.Text() + "\n")
		if got := re.FindStringSubmatch(sc.Text()); got != nil && m == nil {
			m = got
		}
		if strings.Contains(sc.Text(), "msg=supervising") {
			break
		}
	}
	return m, logged.String()
}
