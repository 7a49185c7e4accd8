package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// stemcellMonitUnit is the stemcell's own monit.service, in the shape
// Noble's stemcell builder gives it (bosh_monit's assets): the stemcell's
// monit in the foreground, Restart=always, KillMode=process, and a
// firewall command before each start, which the ExecStartPre here stands
// for: it counts the starts, so that the test sees the stemcell's settings
// kept under vigil's drop-in.
const stemcellMonitUnit = `[Unit]
Description=Monit service (the stemcell's, as on Noble)
After=network.target
ConditionPathExists=/var/vcap/data/sys/run

[Service]
ExecStartPre=/bin/sh -c 'echo start >>/run/rig-monit-prestart'
ExecStart=/bin/bash -c 'PATH=/var/vcap/bosh/bin:$PATH exec nice -n -10 /var/vcap/bosh/bin/monit -I -c /var/vcap/bosh/etc/monitrc'
Restart=always
KillMode=process

[Install]
WantedBy=multi-user.target
`

const (
	stemcellUnitPath = "/usr/lib/systemd/system/monit.service"
	vigilDropIn      = "/etc/systemd/system/monit.service.d/vigil.conf"
	monitrc          = "/var/vcap/bosh/etc/monitrc"
)

// TestStemcellRelease deploys vigil's BOSH release onto a systemd
// stemcell the way BOSH does, against the guest's real systemd: the
// stemcell's monit.service and monit (Debian's), the release's templates
// as the director renders them (the host renders them into the share), the
// agent's apply, the jobs' pre-start scripts, and the agent's monit reload
// (systemctl kill and start monit, then the incarnation poll). Then the
// agent's drains, stops and starts, a new package, vigil.supervisor
// false, vigil again, and a deploy that drops the vigil job. It leaves
// the guest as it found it.
func TestStemcellRelease(t *testing.T) {
	inGuest(t)
	t.Cleanup(func() {
		if t.Failed() {
			for _, u := range []string{"monit.service", "vigil.service"} {
				out, _ := exec.Command("journalctl", "--no-pager", "-n", "60", "-u", u).CombinedOutput()
				t.Logf("journal of %s:\n%s", u, out)
			}
		}
		for _, c := range [][]string{{"systemctl", "stop", "monit.service", "vigil.service"},
			{"rm", "-rf", "/etc/systemd/system/vigil.service", "/etc/systemd/system/monit.service.d", stemcellUnitPath, vcap},
			{"systemctl", "daemon-reload"}} {
			exec.Command(c[0], c[1:]...).Run()
		}
	})
	setupStemcell(t)
	sh(t, "systemctl", "start", "monit.service") // the agent's start at its boot
	first := awaitMonit(t)
	if first.Version == "5.2.5" {
		t.Fatalf("the stemcell's monit answers as vigil: %+v", first)
	}
	t.Logf("vmrig: the stemcell's monit %s answers, incarnation %s", first.Version, first.Incarnation)

	t.Run("the first deploy puts vigil in monit's place", func(t *testing.T) { deploy(t, "on", true) })
	t.Run("the agent's reloads touch no job", func(t *testing.T) { agentReloads(t, []string{"sig"}) })
	t.Run("the agent's drain, stop and start read the truth", agentRun)
	t.Run("a new package restarts the daemon, the jobs kept", releaseUpgrade)
	t.Run("vigil.supervisor false gives monit.service back", func(t *testing.T) { deploy(t, "off", false) })
	t.Run("vigil again", func(t *testing.T) { deploy(t, "on", true) })
	t.Run("a deploy without the vigil job gives monit.service back", releaseRemoved)
}

// setupStemcell lays out what a systemd stemcell has before any deploy:
// its monit.service, its monit binary, monitrc, the agent's monit user,
// its agent.json naming systemd as the agent's service manager (which the
// release reads to tell Noble from Jammy), and the directories the agent
// makes once it has mounted the disks.
func setupStemcell(t *testing.T) {
	exec.Command("systemctl", "stop", "monit.service").Run() // Debian's own, started at boot
	write(t, stemcellUnitPath, stemcellMonitUnit, 0o644)
	write(t, vcap+"/bosh/agent.json", `{"Platform": {"Linux": {"ServiceManager": "systemd"}}}`, 0o644)
	b, err := os.ReadFile("/usr/bin/monit")
	if err != nil {
		t.Fatalf("the stemcell's monit (Debian's package): %v", err)
	}
	write(t, vcap+"/bosh/bin/monit", string(b), 0o755)
	// The stemcell's monitrc, but for the credentials: Debian's monit
	// 5.34 refuses any htpasswd file ("is not a file", a bug of monit
	// 5.34), so the agent's user is named inline, which vigil reads too.
	write(t, monitrc, "set daemon 10\nset logfile /var/vcap/monit/monit.log\n"+
		"set httpd port 2822 and use address 127.0.0.1\n  allow vcap:random-password\n"+
		"include /var/vcap/monit/*.monitrc\ninclude /var/vcap/monit/job/*.monitrc\n", 0o700)
	write(t, vcap+"/monit/empty.monitrc", "", 0o644)
	write(t, vcap+"/monit/monit.user", "vcap:random-password", 0o600)
	for _, d := range []string{"data/sys/run", "sys/run", "sys/log", "monit/job"} {
		if err := os.MkdirAll(filepath.Join(vcap, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, vcap+"/jobs/sig/config/bpm.yml", stemcellJobs["sig"], 0o644)
	sh(t, "systemctl", "daemon-reload")
	if out, err := exec.Command(vcap+"/bosh/bin/monit", "-t", "-c", monitrc).CombinedOutput(); err != nil {
		ls, _ := exec.Command("ls", "-la", vcap+"/monit", "/var/vcap").CombinedOutput()
		t.Fatalf("the stemcell's monit refuses its monitrc: %v\n%s\n%s", err, out, ls)
	}
}

// awaitMonit waits for the monit API to answer, as the agent's start of
// monit is retried (10 tries, a second apart), and returns what it says.
func awaitMonit(t *testing.T) monitInfo {
	t.Helper()
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	var err error
	for range maxChecks * 3 {
		var m monitInfo
		if m, err = readMonit(); err == nil {
			return m
		}
		<-tick.C
	}
	t.Fatalf("the monit API never answered: %v", err)
	return monitInfo{}
}

// deploy is one deploy of the instance as BOSH runs it: the director stops
// the jobs; the agent's apply removes the job control files and installs
// the release's jobs (variant on or off: vigil.supervisor) and package;
// the pre-start scripts run; the agent writes the control files (only
// with vigil, since the stemcell's monit would run the workload through
// vigil's bpm and hold it) and reloads monit. vigil then answers, or the
// stemcell's monit does.
func deploy(t *testing.T, variant string, vigil bool) {
	directorStop(t)
	sh(t, "rm", "-rf", vcap+"/monit/job", vcap+"/jobs/bpm", vcap+"/jobs/vigil")
	for _, job := range []string{"bpm", "vigil"} {
		sh(t, "cp", "-a", filepath.Join(os.Getenv("VIGIL_VM_RELEASE"), variant, "jobs", job), vcap+"/jobs/")
	}
	installPackage(t, "v1")
	starts := prestarts(t)
	for _, job := range []string{"bpm", "vigil"} {
		out, err := exec.Command(vcap + "/jobs/" + job + "/bin/pre-start").CombinedOutput()
		if err != nil {
			t.Fatalf("%s's pre-start: %v\n%s", job, err, out)
		}
		t.Logf("%s's pre-start:\n%s", job, strings.TrimSpace(string(out)))
	}
	if vigil {
		write(t, vcap+"/monit/job/0000_sig.monitrc", "check process sig\n"+
			"  with pidfile /var/vcap/sys/run/bpm/sig/rec.pid\n"+
			"  start program \"/var/vcap/jobs/bpm/bin/bpm start sig -p rec\"\n"+
			"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop sig -p rec\"\n  group vcap\n", 0o644)
	}
	from := cursor(t)
	try, check, now := agentReload(t)
	t.Logf("vmrig: deploy %s: the agent's reload took try %d, check %d; monit %s answers, incarnation %s",
		variant, try, check, now.Version, now.Incarnation)
	if vigil {
		// The first deploy's new incarnation may be the new daemon's own
		// (vigil.service starts first); monit.service's client follows.
		waitJournal(t, "monit.service", from, "the daemon re-read the control files")
	}
	t.Logf("monit.service's journal through the reload:\n%s", run(t, "journalctl", "--no-pager", "-o", "short-precise", "-u", "monit.service", "--after-cursor="+from))
	if got := prestarts(t); got <= starts {
		t.Errorf("the stemcell's ExecStartPre ran %d times, %d before the reload: its settings were lost\n%s\n%s", got, starts,
			run(t, "systemctl", "show", "-p", "ExecStartPre,DropInPaths,FragmentPath,NRestarts", "monit.service"),
			run(t, "systemctl", "cat", "monit.service"))
	}
	if vigil {
		vigilServes(t, now)
		post(t, "http://127.0.0.1:2822/sig", "action=start") // the agent's Start
		running(t, "sig")
	} else {
		stemcellServes(t, now)
	}
}

// directorStop stops the workload as the director does before an update
// (the agent's Stop through the monit API), when vigil runs it.
func directorStop(t *testing.T) {
	if m, err := readMonit(); err != nil || m.Version != "5.2.5" {
		return
	}
	if _, err := os.Stat(vcap + "/monit/job/0000_sig.monitrc"); err != nil {
		return
	}
	post(t, "http://127.0.0.1:2822/sig", "action=stop")
	act(t, control.ActionStop, "sig") // returns once it has stopped
}

// installPackage installs the vigil package as the agent does: its files
// in data/packages/vigil/VERSION (the binary, bpm and monit links, the
// stemcell's units as the packaging copies them), then packages/vigil
// pointing there.
func installPackage(t *testing.T, version string) {
	dir := vcap + "/data/packages/vigil/" + version
	b, err := os.ReadFile(bin("vigil"))
	if err != nil {
		t.Fatal(err)
	}
	// Beside and renamed over, as a package's files are replaced: a
	// running daemon's binary cannot be written in place (ETXTBSY).
	write(t, dir+"/bin/vigil.new", string(b), 0o755)
	if err := os.Rename(dir+"/bin/vigil.new", dir+"/bin/vigil"); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"vigil.service", "monit.service"} {
		sh(t, "install", "-D", "-m", "0644", filepath.Join(os.Getenv("VIGIL_VM_RELEASE"), "stemcell", u), dir+"/stemcell/"+u)
	}
	sh(t, "ln", "-sfn", "vigil", dir+"/bin/bpm")
	sh(t, "ln", "-sfn", "vigil", dir+"/bin/monit")
	os.MkdirAll(vcap+"/packages", 0o755)
	sh(t, "ln", "-sfn", dir, vcap+"/packages/vigil.new")
	sh(t, "mv", "-T", vcap+"/packages/vigil.new", vcap+"/packages/vigil")
}

// prestarts counts the starts of the stemcell's monit.service (its
// ExecStartPre's lines).
func prestarts(t *testing.T) int {
	b, _ := os.ReadFile("/run/rig-monit-prestart")
	return strings.Count(string(b), "\n")
}

// vigilServes: vigil answers (now), its daemon runs in vigil.service's
// delegated group and the stemcell's monit.service, under vigil's drop-in,
// runs the client alone.
func vigilServes(t *testing.T, now monitInfo) {
	t.Helper()
	if now.Version != "5.2.5" {
		t.Fatalf("monit %s answers, not vigil", now.Version)
	}
	if st := show(t, "vigil.service", "ActiveState")[0]; st != "active" {
		t.Fatalf("vigil.service is %s", st)
	}
	if d := show(t, "monit.service", "DropInPaths")[0]; !strings.Contains(d, vigilDropIn) {
		t.Errorf("monit.service's drop-ins: %q", d)
	}
	client := mainPID(t, "monit.service")
	if c := cmdline(client); !strings.Contains(c, " monit-service ") {
		t.Errorf("monit.service runs %q", c)
	}
	if g := cgroupOf(t, client); g != "/sys/fs/cgroup/system.slice/monit.service" {
		t.Errorf("monit.service's client is in %s", g)
	}
	if g := cgroupOf(t, status(t, sock).Daemon.PID); g != unitGroup+"/supervisor" {
		t.Errorf("the daemon is in %s", g)
	}
}

// stemcellServes: the stemcell's monit answers (now) from the stemcell's
// monit.service, without vigil's drop-in, and vigil.service, its unit and
// its cgroup are gone.
func stemcellServes(t *testing.T, now monitInfo) {
	t.Helper()
	if now.Version == "5.2.5" {
		t.Fatalf("vigil still answers: %+v", now)
	}
	if st := show(t, "vigil.service", "ActiveState", "LoadState"); st[0] != "inactive" || st[1] != "not-found" {
		t.Errorf("vigil.service is %v, want inactive and no unit", st)
	}
	if d := show(t, "monit.service", "DropInPaths")[0]; d != "" {
		t.Errorf("monit.service's drop-ins: %q", d)
	}
	if c := cmdline(mainPID(t, "monit.service")); !strings.Contains(c, " -I -c "+monitrc) || strings.Contains(c, "vigil") {
		t.Errorf("monit.service runs %q", c)
	}
	if _, err := os.Stat(unitGroup); err == nil {
		t.Errorf("vigil.service's cgroup is still there: %v", groupsBelow(unitGroup))
	}
}

// releaseUpgrade: a deploy brings a new vigil package; its pre-start
// restarts vigil.service onto the new binary, which adopts the jobs.
func releaseUpgrade(t *testing.T) {
	before := running(t, "sig")
	daemon := status(t, sock).Daemon.PID
	installPackage(t, "v2")
	out := sh(t, vcap+"/jobs/vigil/bin/pre-start")
	if !strings.Contains(out, "vigil.service restarted") {
		t.Errorf("the pre-start did not restart the daemon:\n%s", out)
	}
	after := running(t, "sig")
	st := status(t, sock)
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(st.Daemon.PID) + "/exe")
	if st.Daemon.PID == daemon || exe != vcap+"/data/packages/vigil/v2/bin/vigil" {
		t.Errorf("the daemon %d → %d runs %s, want the new package's", daemon, st.Daemon.PID, exe)
	}
	if after.PID != before.PID || after.ExecPID != before.ExecPID {
		t.Errorf("sig/rec was init %d, executable %d; now %d, %d", before.PID, before.ExecPID, after.PID, after.ExecPID)
	}
	t.Logf("vmrig: the new package's pre-start: daemon %d → %d (%s); sig/rec executable %d kept", daemon, st.Daemon.PID, exe, after.ExecPID)
	// The restart carries to monit.service (Requires=), whose start (a
	// reload of the new daemon) may still run: a start joins that job and
	// returns once it is done, before the next deploy changes the
	// property its guard reads (a deploy that came first had the guard
	// give monit.service back under the agent's reload).
	sh(t, "systemctl", "start", "monit.service")
}

// releaseRemoved: a deploy without the vigil job (its job and package
// removed by the agent's apply; no script of the release runs): the
// agent's reload starts monit.service, whose guard gives it back.
func releaseRemoved(t *testing.T) {
	directorStop(t)
	sh(t, "rm", "-rf", vcap+"/monit/job", vcap+"/jobs/vigil", vcap+"/packages/vigil", vcap+"/data/packages/vigil")
	from := cursor(t)
	try, check, now := agentReload(t)
	t.Logf("vmrig: without the vigil job the agent's reload took try %d, check %d; monit %s answers", try, check, now.Version)
	t.Logf("monit.service's journal through the reload:\n%s", run(t, "journalctl", "--no-pager", "-o", "short-precise", "-u", "monit.service", "-u", "vigil.service", "--after-cursor="+from))
	stemcellServes(t, now)
}
