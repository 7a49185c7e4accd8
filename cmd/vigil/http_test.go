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

	"github.com/vigil-bosh/vigil/metrics/metricstest"
	"github.com/vigil-bosh/vigil/web"
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
	cmd := exec.Command(vigilBin, "daemon", "--root", c.root, "--backend", "native", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "VIGIL_ISOLATION=off")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	sc := bufio.NewScanner(stderr)
	var url, credPath string
	for sc.Scan() {
		logged.WriteString(sc.Text() + "\n")
		if m := pageURL.FindStringSubmatch(sc.Text()); m != nil {
			url, credPath = m[1], m[2]
		}
		if strings.Contains(sc.Text(), "msg=supervising") {
			break
		}
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		io.Copy(io.Discard, stderr)
		if err := cmd.Wait(); err != nil {
			t.Errorf("daemon exited with %v", err)
		}
	}()
	if url == "" {
		t.Fatalf("no status page logged:\n%s", logged.String())
	}
	fi, err := os.Lstat(credPath)
	if err != nil || fi.Mode() != 0o600 || credPath != filepath.Join(c.root, "sys", "run", "vigil", "http-credentials") {
		t.Fatalf("credentials %s: %v %v", credPath, fi, err)
	}
	creds, err := web.ReadCredentials(credPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logged.String(), creds[0].Password) {
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
