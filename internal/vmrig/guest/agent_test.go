package guest

import (
	"encoding/xml"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// The BOSH agent's monit reload on a systemd stemcell (bosh-agent,
// jobsupervisor/monit_job_supervisor.go Reload, with provider.go's
// options): read the incarnation; then up to maxTries times `systemctl
// kill monit` and `systemctl start monit`, each followed by up to
// maxChecks reads of the incarnation, checkEvery apart, until it differs.
const (
	maxTries   = 3
	maxChecks  = 10
	checkEvery = time.Second
)

// monitInfo is what the agent reads of the monit API's status.
type monitInfo struct {
	Incarnation string `xml:"incarnation,attr"`
	Version     string `xml:"version,attr"`
}

// readMonit reads GET /_status2?format=xml with the agent's credentials.
func readMonit() (monitInfo, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:2822/_status2?format=xml", nil)
	req.SetBasicAuth("vcap", "random-password")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return monitInfo{}, err
	}
	defer resp.Body.Close()
	var m monitInfo
	d := xml.NewDecoder(resp.Body)
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	if err := d.Decode(&m); err != nil || m.Incarnation == "" {
		return monitInfo{}, &os.PathError{Op: "monit status " + resp.Status, Path: "/_status2", Err: err}
	}
	return m, nil
}

// agentReload does the agent's reload and returns the try and the check
// of that try that saw the new incarnation, and what answered; it fails
// as the agent would ("Failed to reload monit").
func agentReload(t *testing.T) (try, check int, now monitInfo) {
	t.Helper()
	old, err := readMonit()
	if err != nil {
		t.Fatalf("Getting monit incarnation: %v", err)
	}
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for try = 1; try <= maxTries; try++ {
		if out, err := exec.Command("systemctl", "kill", "monit").CombinedOutput(); err != nil {
			t.Logf("agent: failed to kill monit while reloading: %v %s", err, out)
			continue
		}
		if out, err := exec.Command("systemctl", "start", "monit").CombinedOutput(); err != nil {
			t.Logf("agent: failed to start monit while reloading: %v %s", err, out)
			continue
		}
		for check = 1; check <= maxChecks; check++ {
			if now, err = readMonit(); err == nil && now.Incarnation != old.Incarnation {
				return try, check, now
			}
			<-tick.C // the agent's poll (what is under test, not a wait for the test's sake)
		}
	}
	t.Fatalf("Failed to reload monit: before=%s", old.Incarnation)
	return
}

// mainPID is a unit's main process (0 without one).
func mainPID(t *testing.T, unit string) int {
	t.Helper()
	n, _ := strconv.Atoi(show(t, unit, "MainPID")[0])
	return n
}

// cmdline is a process's command line, its arguments joined by blanks.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// agentReloads: the agent's reload three times in a row. Each time the
// first try's start makes vigil's daemon re-read the control files (a new
// incarnation, answered by vigil, at the agent's first read after its
// start), monit.service gets a new client, and
// no job is touched: the same daemon, every executable with the pid it
// had, no restart, and no signal in the logs of jobs (each one recording
// the signals it gets).
func agentReloads(t *testing.T, jobs []string) {
	var logs []string
	for _, job := range jobs {
		running(t, job)
		logs = append(logs, vcap+"/sys/log/"+job+"/"+procOf(job)+".stdout.log")
	}
	before := status(t, sock)
	const mark = "vmrig: agent reloads"
	for _, l := range logs {
		appendLine(t, l, mark)
	}
	for round := 1; round <= 3; round++ {
		client := mainPID(t, "monit.service")
		try, check, now := agentReload(t)
		next := mainPID(t, "monit.service")
		if try != 1 || now.Version != "5.2.5" {
			t.Errorf("round %d: the new incarnation came at try %d, from monit %s (want the first try, vigil's 5.2.5)", round, try, now.Version)
		}
		if check != 1 { // monit.service is ready once the daemon re-read the files
			t.Errorf("round %d: the new incarnation came at the agent's read %d after its start, want its first", round, check)
		}
		if next == client || !strings.Contains(cmdline(next), " monit-service ") {
			t.Errorf("round %d: monit.service's process %d → %d (%s)", round, client, next, cmdline(next))
		}
		t.Logf("vmrig: agent reload %d: try %d, check %d, incarnation %s; monit.service's client %d → %d",
			round, try, check, now.Incarnation, client, next)
	}
	after := status(t, sock)
	if after.Daemon.PID != before.Daemon.PID {
		t.Errorf("the daemon changed: %d → %d", before.Daemon.PID, after.Daemon.PID)
	}
	for _, p := range before.Processes {
		q, _ := processOf(after, p.Job, p.Process)
		if p.State == "running" && (q.PID != p.PID || q.ExecPID != p.ExecPID || q.Restarts != p.Restarts) {
			t.Errorf("%s/%s: init %d, executable %d, restarts %d → %d, %d, %d",
				p.Job, p.Process, p.PID, p.ExecPID, p.Restarts, q.PID, q.ExecPID, q.Restarts)
		}
	}
	for _, l := range logs {
		_, since, _ := strings.Cut(readTrim(t, l), mark)
		if strings.Contains(since, "got ") {
			t.Errorf("%s: a job was signalled:%s", l, since)
		}
	}
	t.Logf("vmrig: after 3 agent reloads: daemon %d kept, every executable kept, no signal recorded (%s)", after.Daemon.PID, strings.Join(jobs, ", "))
}

// stemcellCLI: with monit.service stopped, the monit CLI the agent and
// operators use still reaches vigil's daemon: monit summary, and monit
// stop -g vcap (the agent's StopAndWait), which stops every job.
func stemcellCLI(t *testing.T) {
	monit := vcap + "/bosh/bin/monit"
	sh(t, "systemctl", "stop", "monit.service")
	out := sh(t, monit, "summary")
	for _, job := range []string{"web", "sig"} {
		if !regexp.MustCompile(`Process '` + job + `'\s+running\n`).MatchString(out) {
			t.Errorf("monit summary without monit.service:\n%s", out)
		}
	}
	sh(t, monit, "stop", "-g", "vcap")
	for _, job := range []string{"web", "sig"} {
		waitEvent(t, sock, 2*time.Minute, func(ev control.Event) bool {
			return ev.Job == job && ev.Kind == control.EventStopped
		})
	}
	if out := sh(t, monit, "summary"); regexp.MustCompile(`Process '(web|sig)'\s+running\n`).MatchString(out) {
		t.Errorf("monit summary after monit stop -g vcap:\n%s", out)
	}
	t.Logf("vmrig: monit.service %s; monit stop -g vcap stopped every job; summary:\n%s",
		show(t, "monit.service", "ActiveState")[0], sh(t, monit, "summary"))
	sh(t, "systemctl", "start", "monit.service")
	for _, job := range []string{"web", "sig"} { // hog stays down: its OOM kills would churn the storm's groups
		sh(t, monit, "start", job)
		running(t, job)
	}
}
