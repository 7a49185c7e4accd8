package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

const (
	vcap      = "/var/vcap"
	unitGroup = "/sys/fs/cgroup/system.slice/vigil.service"
	slice     = "/sys/fs/cgroup/system.slice"
	// webScope is web/server's scope, named as bpm's (runc-bpm- and bpm's
	// container ID, the '.' between job and process written .2e).
	webScope = slice + "/runc-bpm-web.2eserver.scope"
	sock     = vcap + "/sys/run/vigil/vigil.sock"
	// termLoop logs the TERM it gets and exits on it.
	termLoop = `trap "echo got TERM; exit 0" TERM; echo up; while :; do sleep 1 & wait $!; done`
	// sigRecorder logs each signal it can catch, and exits on TERM.
	sigRecorder = `for s in HUP INT QUIT USR1 USR2 ALRM PIPE CONT WINCH; do trap "echo got $s" $s; done; ` + termLoop
)

// stemcellJobs are the bpm jobs, with the agent's monit files for them.
var stemcellJobs = map[string]string{
	"web": `processes:
- name: server
  executable: /bin/sh
  args: ["-c", '` + termLoop + `']
  limits: {memory: 64M, processes: 20, cpu_weight: 50, cpu_quota: 150, cpuset: "0"}
`,
	// records every signal it gets (TERM ends it): the agent's reloads
	// must bring it none.
	"sig": `processes:
- name: rec
  executable: /bin/sh
  args: ["-c", '` + sigRecorder + `']
`,
	// stops slowly on its shutdown signal, INT: a TERM during its stop
	// (systemd stopping its scope) would show in its log.
	"slow": `processes:
- name: slow
  executable: /bin/sh
  args: ["-c", 'trap "echo got INT; sleep 3; echo slow: stopped; exit 0" INT; trap "echo got TERM" TERM; echo up; while :; do sleep 1 & wait $!; done']
  shutdown_signal: INT
`,
	// eats memory until the OOM killer ends it; after its second kill it
	// waits an hour in backoff, so that every report can be read.
	"hog": `processes:
- name: eater
  executable: /bin/sh
  args: ["-c", "echo eating; exec tail /dev/zero"]
  limits: {memory: 32M}
  restart: {backoff: {initial: 1h, max: 1h}}
`,
}

// installStemcell lays out /var/vcap as the agent leaves it (jobs, monit
// files, the stemcell's monitrc and monit.user), installs vigil as bpm,
// monit and the stemcell's service, and starts the service.
func installStemcell(t *testing.T) {
	for name, yml := range stemcellJobs {
		write(t, filepath.Join(vcap, "jobs", name, "config", "bpm.yml"), yml, 0o644)
		write(t, filepath.Join(vcap, "monit", "job", "0000_"+name+".monitrc"), "check process "+name+"\n"+
			"  with pidfile /var/vcap/sys/run/bpm/"+name+"/"+procOf(name)+".pid\n"+
			"  start program \"/var/vcap/jobs/bpm/bin/bpm start "+name+" -p "+procOf(name)+"\"\n"+
			"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop "+name+" -p "+procOf(name)+"\"\n"+
			"  group vcap\n", 0o644)
	}
	write(t, vcap+"/bosh/etc/monitrc", "set daemon 10\nset httpd port 2822 and use address 127.0.0.1\n"+
		"  allow cleartext /var/vcap/monit/monit.user\ninclude /var/vcap/monit/*.monitrc\n"+
		"include /var/vcap/monit/job/*.monitrc\n", 0o700)
	write(t, vcap+"/monit/empty.monitrc", "", 0o644)
	write(t, vcap+"/monit/monit.user", "vcap:random-password", 0o600)
	b, err := os.ReadFile(bin("vigil"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, vcap+"/bosh/bin/vigil", string(b), 0o755)
	sh(t, vcap+"/bosh/bin/vigil", "install", "--root", vcap, "--unit-dir", "/etc/systemd/system")
	// The metrics, for the OOM report there: the shipped unit serves none.
	write(t, "/etc/systemd/system/vigil.service.d/rig.conf", "[Service]\nExecStart=\n"+
		"ExecStart=/var/vcap/bosh/bin/vigil daemon --root /var/vcap --backend native --leave-running-unless-stopping --http 127.0.0.1:2823\n", 0o644)
	sh(t, "systemctl", "daemon-reload")
	sh(t, "systemctl", "start", "monit.service") // as the agent does; it starts vigil.service first
}

// procOf is the process of a job: named as the job, but for these.
func procOf(job string) string {
	switch job {
	case "web":
		return "server"
	case "sig":
		return "rec"
	case "hog":
		return "eater"
	}
	return job
}

// TestStemcellService runs vigil as the stemcell's service (the unit in
// the repository) over real jobs with limits, then restarts, storms and
// stops it, and leaves it running for the shutdown census.
func TestStemcellService(t *testing.T) {
	inGuest(t)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("journalctl", "--no-pager", "-n", "600", "-u", "vigil.service").CombinedOutput()
			st, _ := exec.Command(vcap+"/bosh/bin/vigil", "status", "--root", vcap).CombinedOutput()
			t.Logf("journal of vigil.service:\n%s\nvigil status:\n%s", out, st)
		}
	})
	installStemcell(t)
	web := running(t, "web")

	t.Run("cgroup v2 limits in the delegated subtree", func(t *testing.T) { stemcellLimits(t, web) })
	t.Run("OOM kill reported in status, monit XML and metrics", stemcellOOM)
	t.Run("the agent's reload, systemctl kill and start monit, touches no job", func(t *testing.T) { agentReloads(t, []string{"sig", "web"}) })
	t.Run("monit's CLI works while monit.service is down", stemcellCLI)
	t.Run("systemctl restart keeps the jobs and the new daemon adopts them", stemcellRestart)
	t.Run("a kill of the daemon alone keeps the jobs, as the agent's reload needs", stemcellKill)
	t.Run("a restart storm leaves no cgroup behind", stemcellStorm)
	t.Run("systemctl stop stops every job with the ladder and leaves nothing", stemcellStop)

	// Running again, for the shutdown: the census unit checks, once
	// systemd has stopped vigil, that nothing was left.
	sh(t, "systemctl", "start", "monit.service")
	web = running(t, "web")
	slow := running(t, "slow")
	write(t, "/run/vigil-rig-census.pids", fmt.Sprint(web.PID, web.ExecPID, slow.PID, slow.ExecPID), 0o644)
	for _, log := range []string{"web/server", "slow/slow"} {
		appendLine(t, vcap+"/sys/log/"+log+".stdout.log", "vmrig: shutdown")
	}
	write(t, "/etc/systemd/system/vigil-rig-census.service", censusUnit, 0o644)
	sh(t, "systemctl", "daemon-reload")
	sh(t, "systemctl", "start", "vigil-rig-census.service")
}

// stemcellLimits: each process in its own scope, named as bpm's, with its
// cgroup v2 limits; the daemon alone in its unit. What it finds is logged
// first, for the report (and to show where processes went when it fails).
func stemcellLimits(t *testing.T, web control.ProcessStatus) {
	init := procStatus(t, web.PID)
	t.Logf("vmrig: web/server: /proc/%d/cgroup (init, %s threads, resident %s) %s; /proc/%d/cgroup (executable) %s",
		web.PID, init["Threads"], init["VmRSS"], readTrim(t, fmt.Sprintf("/proc/%d/cgroup", web.PID)),
		web.ExecPID, readTrim(t, fmt.Sprintf("/proc/%d/cgroup", web.ExecPID)))
	logLines(t, "cgls", sh(t, "systemd-cgls", "--no-pager", "--full", "/system.slice"))
	for _, u := range []struct{ unit, props string }{
		{filepath.Base(webScope), "Slice,Delegate,MemoryMax,TasksMax,OOMPolicy,Before,Conflicts"},
		{"system.slice", "DefaultDependencies,Conflicts"},
		{"vigil.service", "Conflicts,Before"},
	} {
		logLines(t, u.unit, sh(t, "systemctl", "show", u.unit, "-p", u.props))
	}
	dir := cgroupOf(t, web.ExecPID)
	if dir != webScope {
		t.Errorf("web/server's executable runs in %s, want its scope %s", dir, webScope)
	}
	if d := cgroupOf(t, web.PID); d != webScope {
		t.Errorf("web/server's init runs in %s, want its scope %s", d, webScope)
	}
	if d := cgroupOf(t, status(t, sock).Daemon.PID); d != unitGroup+"/supervisor" {
		t.Errorf("the daemon runs in %s, want %s/supervisor", d, unitGroup)
	}
	if left := groupsBelow(unitGroup); len(left) != 1 {
		t.Errorf("vigil.service holds groups besides the daemon's: %v", left)
	}
	for file, want := range map[string]string{"memory.max": "67108864", "memory.swap.max": "0",
		"pids.max": "20", "cpu.weight": "50", "cpu.max": "150000 100000", "cpuset.cpus": "0"} {
		got := readTrim(t, filepath.Join(dir, file))
		if got != want {
			t.Errorf("%s: %q, want %q", file, got, want)
		}
		t.Logf("vmrig: %s/%s = %s", strings.TrimPrefix(dir, "/sys/fs/cgroup/"), file, got)
	}
}

// stemcellOOM: OOM kill reported in status, monit XML and metrics.
func stemcellOOM(t *testing.T) {
	waitEvent(t, sock, 3*time.Minute, func(ev control.Event) bool {
		return ev.Job == "hog" && ev.Kind == control.EventBackoff && ev.Restarts >= 1
	})
	hog, _ := processOf(status(t, sock), "hog", "eater")
	if hog.LastExit == nil || !hog.LastExit.OOM {
		t.Fatalf("hog/eater's last exit %+v, want an OOM kill", hog.LastExit)
	}
	// Exit 3: hog/eater should run and does not.
	out, err := exec.Command(vcap+"/bosh/bin/vigil", "status", "--root", vcap).Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("vigil status with a process in backoff: %v, want exit status 3", err)
	}
	text := string(out)
	if !strings.Contains(text, "killed by the OOM killer") {
		t.Errorf("vigil status does not say OOM:\n%s", text)
	}
	xml := get(t, "http://127.0.0.1:2822/_status2?format=xml", "vcap", "random-password")
	hogXML := regexp.MustCompile(`<service name="hog">.*?</service>`).FindString(xml)
	if !strings.Contains(hogXML, "<status>512</status>") || !strings.Contains(hogXML, "killed by the OOM killer") {
		t.Errorf("monit XML for hog: %s", hogXML)
	}
	var user, pass string
	for _, line := range strings.Split(readTrim(t, vcap+"/sys/run/vigil/http-credentials"), "\n") {
		if !strings.HasPrefix(line, "#") && strings.Contains(line, ":") {
			user, pass, _ = strings.Cut(strings.TrimSpace(line), ":")
		}
	}
	metrics := get(t, "http://127.0.0.1:2823/metrics", user, pass)
	// The exits by reason (labels in name order, as the text format
	// writes them).
	m := regexp.MustCompile(`vigil_process_exits_total\{bosh_job="hog",bosh_process="eater",reason="oom"\} (\d+)`).FindStringSubmatch(metrics)
	if m == nil || m[1] == "0" {
		t.Errorf("no OOM kill in the metrics: %v", m)
	}
	t.Logf("vmrig: OOM: vigil status %q; monit XML %s; metrics %s", hog.LastExit.Description, hogXML, m)
}

// stemcellRestart: systemctl restart keeps the jobs and the new daemon adopts them.
func stemcellRestart(t *testing.T) {
	before := status(t, sock)
	web, _ := processOf(before, "web", "server")
	sh(t, "systemctl", "restart", "vigil.service")
	act(t, control.ActionStart, "web") // answered by the new daemon once it has adopted web
	st := status(t, sock)
	after, _ := processOf(st, "web", "server")
	if st.Daemon.PID == before.Daemon.PID {
		t.Fatalf("the daemon kept pid %d across the restart", st.Daemon.PID)
	}
	if after.PID != web.PID || after.ExecPID != web.ExecPID {
		t.Errorf("web/server was pid %d (executable %d), now %d (%d)", web.PID, web.ExecPID, after.PID, after.ExecPID)
	}
	if after.Restarts != web.Restarts {
		t.Errorf("web/server restarts %d → %d", web.Restarts, after.Restarts)
	}
	if st := show(t, "monit.service", "ActiveState")[0]; st != "active" {
		t.Errorf("monit.service is %s after vigil.service's restart, want active (restarted with it)", st)
	}
	if d := cgroupOf(t, after.PID); d != webScope {
		t.Errorf("web/server's init runs in %s after the restart, want its scope %s, kept", d, webScope)
	}
	t.Logf("vmrig: restart of vigil.service: daemon %d → %d; web/server init %d → %d, executable %d → %d",
		before.Daemon.PID, st.Daemon.PID, web.PID, after.PID, web.ExecPID, after.ExecPID)
}

// stemcellKill: a kill of the daemon alone keeps the jobs, as the agent's reload needs.
func stemcellKill(t *testing.T) {
	before := status(t, sock)
	web, _ := processOf(before, "web", "server")
	exited := exitOf(t, before.Daemon.PID)
	sh(t, "systemctl", "kill", "--kill-whom=main", "vigil.service")
	exited()
	sh(t, "systemctl", "start", "vigil.service") // the agent's start; Restart=always would do it too
	act(t, control.ActionStart, "web")
	st := status(t, sock)
	after, _ := processOf(st, "web", "server")
	if st.Daemon.PID == before.Daemon.PID || after.ExecPID != web.ExecPID {
		t.Errorf("daemon %d → %d, web/server executable %d → %d", before.Daemon.PID, st.Daemon.PID, web.ExecPID, after.ExecPID)
	}
}

// stemcellStorm: a restart storm leaves no cgroup behind: each restart of
// the process makes its scope again, the daemon's restarts never touch it.
func stemcellStorm(t *testing.T) {
	for range 3 {
		sh(t, "systemctl", "restart", "vigil.service")
		p := running(t, "web")
		sh(t, "kill", "-KILL", strconv.Itoa(p.ExecPID)) // the process is restarted in its scope made anew
		waitEvent(t, sock, 2*time.Minute, func(ev control.Event) bool {
			return ev.Job == "web" && ev.Kind == control.EventRestarted && ev.Restarts > p.Restarts
		})
		if d := cgroupOf(t, running(t, "web").ExecPID); d != webScope {
			t.Errorf("the restarted web/server runs in %s, want %s", d, webScope)
		}
	}
	if left := groupsBelow(unitGroup); len(left) != 1 {
		t.Errorf("vigil.service holds groups besides the daemon's: %v", left)
	}
	if n := len(scopesOf("runc-bpm-web.")); n != 1 {
		t.Errorf("web has %d scopes, want 1: %v", n, scopesOf("runc-bpm-"))
	}
}

// scopesOf lists the scopes of system.slice whose names begin with prefix.
func scopesOf(prefix string) []string {
	var out []string
	entries, _ := os.ReadDir(slice)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), ".scope") {
			out = append(out, e.Name())
		}
	}
	return out
}

// stemcellStop: systemctl stop stops every job with the ladder and leaves nothing.
func stemcellStop(t *testing.T) {
	web, _ := processOf(status(t, sock), "web", "server")
	sh(t, "systemctl", "stop", "vigil.service")
	checkStopped(t, []int{web.PID, web.ExecPID}, "")
	if st := show(t, "monit.service", "ActiveState")[0]; st != "inactive" {
		t.Errorf("monit.service is %s once vigil.service is stopped, want inactive (it requires it)", st)
	}
}

// censusUnit is stopped after vigil.service at the shutdown (it is
// ordered before it), and runs the census then.
const censusUnit = `[Unit]
Description=vigil rig: what vigil's stop at the shutdown left
Before=vigil.service
RequiresMountsFor=/rig

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
Environment=VIGIL_VM_GUEST=1 VIGIL_VM_CENSUS=1
ExecStop=/bin/sh -c '/opt/rig/internal-vmrig-guest.test -test.v -test.run "^TestStemcellShutdownCensus$" > /rig/out/stemcell-shutdown.log 2>&1; echo $? > /rig/out/stemcell-shutdown.rc'
`

// TestStemcellShutdownCensus runs at the guest's shutdown, after systemd
// stopped vigil.service: every job was stopped with the ladder (web's TERM
// is in its log after the mark) and no process or cgroup is left.
func TestStemcellShutdownCensus(t *testing.T) {
	inGuest(t)
	if os.Getenv("VIGIL_VM_CENSUS") != "1" {
		t.Skip("runs at the guest's shutdown (vigil-rig-census.service)")
	}
	var pids []int
	for _, f := range strings.Fields(readTrim(t, "/run/vigil-rig-census.pids")) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	checkStopped(t, pids, "vmrig: shutdown")
	shutdownOrder(t)
	_, slow, _ := strings.Cut(readTrim(t, vcap+"/sys/log/slow/slow.stdout.log"), "vmrig: shutdown")
	if !strings.Contains(slow, "got INT") || !strings.Contains(slow, "slow: stopped") || strings.Contains(slow, "got TERM") {
		t.Errorf("slow/slow at the shutdown, want its INT and its own end, no TERM from systemd:\n%s", slow)
	}
	t.Logf("vmrig: at the shutdown vigil stopped web/server with its TERM and slow/slow with its INT (a 3 s stop, no TERM from systemd: %q); no process, no cgroup and no scope left",
		strings.TrimSpace(slow))
}

// shutdownOrder checks systemd's own log of the shutdown so far: from its
// stop of vigil.service on, the jobs' scopes went only as vigil emptied
// them (deactivated, never stopped by systemd), before vigil.service had
// stopped.
func shutdownOrder(t *testing.T) {
	out := sh(t, "journalctl", "-b", "--no-pager", "-o", "cat", "_PID=1")
	i := strings.LastIndex(out, "Stopping vigil.service")
	if i < 0 {
		t.Fatalf("systemd's log has no stop of vigil.service")
	}
	var lines []string
	for _, l := range strings.Split(out[i:], "\n") {
		if strings.Contains(l, "runc-bpm-") || strings.Contains(l, "vigil.service") {
			lines = append(lines, l)
		}
	}
	logLines(t, "shutdown:", strings.Join(lines, "\n"))
	stopped := -1
	for n, l := range lines {
		switch {
		case strings.Contains(l, "Stopped vigil.service"):
			stopped = n
		case strings.Contains(l, "Stopping runc-bpm-"):
			t.Errorf("systemd stopped a job's scope: %s", l)
		case strings.Contains(l, "runc-bpm-") && stopped >= 0:
			t.Errorf("a scope went after vigil.service had stopped: %s", l)
		}
	}
	if stopped < 0 {
		t.Error("systemd's log has no end of vigil.service's stop")
	}
}

// checkStopped asserts that the unit's daemon stopped web/server with its
// shutdown signal (logged after the mark, when given) and left neither
// process nor cgroup.
func checkStopped(t *testing.T, pids []int, mark string) {
	t.Helper()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d of web/server still runs", pid)
		}
	}
	log := readTrim(t, vcap+"/sys/log/web/server.stdout.log")
	if mark != "" {
		_, log, _ = strings.Cut(log, mark)
	}
	if !strings.Contains(log, "got TERM") {
		t.Errorf("web/server did not get its TERM:\n%s", log)
	}
	if left := groupsBelow(unitGroup); len(left) > 0 {
		t.Errorf("cgroups left behind: %v", left)
	}
	if left := scopesOf("runc-bpm-"); len(left) > 0 {
		t.Errorf("scopes left behind: %v", left)
	}
	if b, err := os.ReadFile(unitGroup + "/cgroup.procs"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		t.Errorf("processes left in %s: %s", unitGroup, b)
	}
}

// running waits until the job's process runs (the control API's start
// blocks until it has settled) and returns its status.
func running(t *testing.T, job string) control.ProcessStatus {
	t.Helper()
	act(t, control.ActionStart, job)
	p, _ := processOf(status(t, sock), job, procOf(job))
	if p.State != "running" || p.ExecPID == 0 {
		t.Fatalf("%s: %+v", job, p)
	}
	return p
}

// act asks the daemon for an action on a job's one process, waiting (on
// the socket's directory) for a daemon that is still starting.
func act(t *testing.T, action, job string) control.ProcessStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		sts, err := control.NewClient(sock).Act(ctx, control.ActionRequest{Action: action, Job: job})
		if err == nil && len(sts) == 1 {
			return sts[0]
		}
		var ce *control.Error
		if ctx.Err() != nil || errors.As(err, &ce) {
			t.Fatalf("%s %s: %v %+v", action, job, err, sts)
		}
		watchOnce(ctx, filepath.Dir(sock)) // not answering yet
	}
}

func get(t *testing.T, url, user, pass string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.SetBasicAuth(user, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// logLines logs each line of text for the rig's report (which keeps the
// lines that name it), prefixed with what.
func logLines(t *testing.T, what, text string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		t.Logf("vmrig: %s %s", what, line)
	}
}

// leaves lists the groups below dir that have none below them.
func leaves(dir string) []string {
	var out []string
	for _, g := range groupsBelow(dir) {
		if len(groupsBelow(g)) == 0 {
			out = append(out, g)
		}
	}
	return out
}
