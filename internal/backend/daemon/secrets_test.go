package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-bosh/vigil/internal/bpmcli"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// canary is the secret: it must show nowhere but in the bpm.yml files and
// the executables' own environment.
const canary = "s3cr3t-canary-value"

// lockedBuffer is an io.Writer safe for the daemon's concurrent logging.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// leak fails the test if text holds the canary, quoting the text around it.
func leak(t *testing.T, where, text string) {
	t.Helper()
	if i := strings.Index(text, canary); i >= 0 {
		t.Errorf("the secret shows in %s: ...%s...", where, text[max(i-200, 0):min(i+len(canary)+50, len(text))])
	}
}

// TestSecretsStayOutOfLogsAndStatus: a value of env in bpm.yml shows in
// none of the daemon's log (debug level), the control status, the monit
// HTTP API, bpm list, any file vigil writes under the root, or the init's
// argv and environment, whether the process runs, fails to exec, or its
// job's bpm.yml is invalid right where the secret is.
func TestSecretsStayOutOfLogsAndStatus(t *testing.T) {
	h := newHarness(t)
	h.writeJob("web", pr{"server", "serve", []string{"SECRET_TOKEN=" + canary}})
	// An executable that exists but cannot be executed (no #! line, not ELF).
	h.write("jobs/broken/bin/app", "not a program\n", 0o755)
	h.writeFile("broken", "processes:\n- name: gone\n  executable: "+h.layout.Root()+"/jobs/broken/bin/app\n  env:\n    SECRET_TOKEN: "+canary+"\n")
	bad := map[string]string{ // invalid right at the secret
		"seq":      "  env:\n    SECRET_TOKEN: [" + canary + "]\n",
		"map":      "  env:\n    SECRET_TOKEN: {k: " + canary + "}\n",
		"quote":    "  env:\n    SECRET_TOKEN: \"" + canary + "\n",
		"colon":    "  env:\n    SECRET_TOKEN: " + canary + ": x\n",
		"tab":      "  env:\n\tSECRET_TOKEN: " + canary + "\n",
		"badkey":   "  env:\n    \"SECRET=TOKEN\": " + canary + "\n",
		"envlist":  "  env: [SECRET_TOKEN=" + canary + "]\n",
		"indent":   "  env:\n    SECRET_TOKEN: " + canary + "\n   OTHER: x\n",
		"anchor":   "  env:\n    SECRET_TOKEN: *" + canary + "\n",
		"doc":      "  env:\n    SECRET_TOKEN: " + canary + "\n---\n- " + canary + "\n",
		"nested":   "  env:\n    SECRET_TOKEN:\n      - - " + canary + "\n",
		"multiple": "  env:\n    SECRET_TOKEN: " + canary + "\n    SECRET_TOKEN: " + canary + "\n",
		"binary":   "  env:\n    SECRET_TOKEN: !!binary " + canary + "\n",
		"int":      "  env:\n    SECRET_TOKEN: !!int " + canary + "\n",
		"alias":    "  env:\n    A: &x !!float " + canary + "\n    SECRET_TOKEN: *x\n",
		"header":   "  health:\n    liveness: {http: {port: 1, headers: {Authorization: !!bool " + canary + "}}}\n",
	}
	for name, env := range bad {
		h.writeFile("bad-"+name, "processes:\n- name: p\n  executable: /bin/true\n"+env)
	}
	port := freePort(t)
	h.writeMonitrc(10, port)
	for j, p := range map[string]string{"web": "server", "broken": "gone"} {
		h.write("monit/job/"+j+".monitrc", "check process "+j+"\n  with pidfile /var/vcap/sys/run/bpm/"+j+"/"+p+".pid\n"+
			"  start program \"/var/vcap/jobs/bpm/bin/bpm start "+j+" -p "+p+"\"\n"+
			"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop "+j+" -p "+p+"\"\n  group vcap\n", 0o644)
	}
	logs := &lockedBuffer{}
	h.logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.start(supervise.Timing{})
	h.rep.Expect(t, "ready")
	h.waitFor("the failed exec to be restarted", func() bool { return h.status("broken", "gone").Restarts >= 2 })

	st, err := h.c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if problems := fmt.Sprint(st.Problems); !strings.Contains(problems, "bad-quote") || !strings.Contains(problems, "bad-seq") {
		t.Fatalf("the bad jobs are not reported: %s", problems)
	}
	js, _ := json.Marshal(st)
	leak(t, "the control status", string(js))

	api := monitAPI{t: t, base: "http://127.0.0.1:" + strconv.Itoa(port)}
	for _, path := range []string{"/_status2?format=xml", "/_status?format=text", "/_status?format=text&level=summary", "/web", "/broken"} {
		code, body := api.do("GET", path, "")
		if path == "/_status2?format=xml" && code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		leak(t, "monit's "+path, body)
	}

	var out, errOut bytes.Buffer
	bpmEnv := bpmcli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		if k == "VIGIL_ROOT" {
			return h.layout.Root()
		}
		return ""
	}}
	for _, args := range [][]string{{"list", "--json"}, {"list"}, {"pid", "web", "-p", "server"}, {"start", "bad-seq"}, {"start", "bad-quote"}} {
		bpmcli.Main(args, bpmEnv)
	}
	if !strings.Contains(out.String(), `"web"`) {
		t.Fatalf("bpm list --json: %s %s", out.String(), errOut.String())
	}
	leak(t, "bpm's output", out.String()+errOut.String())

	web := h.status("web", "server")
	for _, f := range []string{"cmdline", "environ"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", web.PID, f))
		if err != nil {
			t.Fatal(err)
		}
		leak(t, "the init's "+f, string(b))
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	leak(t, "the daemon's log", logs.String())
	if !strings.Contains(logs.String(), "bad-colon") {
		t.Fatalf("the log does not name the bad jobs:\n%s", logs.String())
	}
	// Every file vigil wrote under the root, logs, pid files and state included.
	filepath.WalkDir(h.layout.Root(), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "bpm.yml") || !d.Type().IsRegular() {
			return nil
		}
		b, _ := os.ReadFile(path)
		leak(t, path, string(b))
		return nil
	})
}
