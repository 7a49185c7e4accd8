package guest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
)

// agentFirewall is the BOSH agent's monit firewall on a cgroup v2 stemcell
// (Noble), as bosh-agent's platform/firewall sets it up at its start:
// output to 127.0.0.1:2822 goes first through the jobs' own rules, then
// established connections and root pass, and everyone else is dropped.
const agentFirewall = `table inet bosh_agent {
	chain monit_access_jobs {
	}
	chain monit_access {
		type filter hook output priority filter - 1; policy accept;
		jump monit_access_jobs
		ct state established,related accept
		meta skuid 0 ip daddr 127.0.0.1 tcp dport 2822 accept
		ip daddr 127.0.0.1 tcp dport 2822 drop
	}
}
`

// enableMonitAccess stands in for the stemcell's bosh-enable-monit-access
// (bosh-agent enable-monit-access; the agent is not built here): the same
// rule the agent's command makes, from the caller's /proc/self/cgroup.
// When an element of that path is runc-bpm-JOB.scope, the job's earlier
// rules (commented bosh-monit-access:JOB) go and one rule lets that
// cgroup (matched at level 2, as the agent matches it) reach the API;
// otherwise vcap's uid gets a rule, which lets every vcap process in.
// Without the jobs chain (an older stemcell) it does nothing.
const enableMonitAccess = `#!/bin/sh
chain="inet bosh_agent monit_access_jobs"
nft list chain $chain >/dev/null 2>&1 || exit 0
path=$(sed -n 's|^0::/||p' /proc/self/cgroup)
job=
for part in $(echo "$path" | tr / ' '); do
	case $part in runc-bpm-*.scope) job=${part#runc-bpm-}; job=${job%.scope} ;; esac
done
if [ -n "$job" ] && [ -d "/sys/fs/cgroup/$path" ]; then
	for h in $(nft -a list chain $chain | sed -n "s/.*comment \"bosh-monit-access:$job\" # handle \([0-9]*\)$/\1/p"); do
		nft delete rule $chain handle "$h" || exit 1
	done
	exec nft add rule $chain socket cgroupv2 level 2 "\"$path\"" ip daddr 127.0.0.1 tcp dport 2822 accept comment "\"bosh-monit-access:$job\""
fi
uid=$(id -u vcap)
nft list chain $chain | grep -q "meta skuid $uid " && exit 0
exec nft add rule $chain meta skuid "$uid" ip daddr 127.0.0.1 tcp dport 2822 accept
`

// probe is a vcap job's process that reads the monit API with the agent's
// credentials at its start and at each USR1, and logs whether it got
// through ("monit: reached: STATUS LINE") or not ("monit: blocked").
const probe = `#!/bin/bash
probe() {
	local line
	if line=$(timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/2822 || exit 1
		printf "GET /_status2?format=xml HTTP/1.0\r\nAuthorization: Basic dmNhcDpyYW5kb20tcGFzc3dvcmQ=\r\n\r\n" >&3
		head -n 1 <&3' 2>/dev/null); then
		echo "monit: reached: ${line%$'\r'}"
	else
		echo "monit: blocked"
	fi
}
trap probe USR1
trap 'exit 0' TERM
probe
while :; do sleep 1 & wait $!; done
`

// firewallJobs: granted asks for access from its pre_start hook (which
// runs in its scope, as root); neighbour asks for nothing; galera's hook
// inserts a rule naming its scope, as pxc-release's galera-agent does.
var firewallJobs = map[string]string{
	"granted":   "/var/vcap/bosh/etc/bosh-enable-monit-access",
	"neighbour": "",
	"galera": `nft insert rule inet bosh_agent monit_access_jobs socket cgroupv2 level 2 '"system.slice/runc-bpm-galera.scope"' ` +
		`ip daddr 127.0.0.1 tcp dport 2822 accept comment '"galera: bpm style"'`,
}

// TestStemcellFirewall runs vigil's jobs under the agent's monit firewall
// (after TestStemcellService, whose service runs on): a job's own grant
// lets its scope in and nobody else, a rule naming bpm's scope matches,
// root's reads pass, and vigil's own commands never need the API.
func TestStemcellFirewall(t *testing.T) {
	inGuest(t)
	t.Cleanup(func() {
		out, _ := exec.Command("nft", "list", "table", "inet", "bosh_agent").CombinedOutput()
		if t.Failed() {
			j, _ := exec.Command("journalctl", "--no-pager", "-n", "200", "-u", "vigil.service").CombinedOutput()
			t.Logf("nft:\n%s\njournal of vigil.service:\n%s", out, j)
		}
		_ = exec.Command("nft", "delete", "table", "inet", "bosh_agent").Run()
	})
	installFirewall(t)
	for job, hook := range firewallJobs {
		installProbeJob(t, job, hook)
	}
	agentReload(t) // the agent's reload reads the new jobs' monit files
	for _, job := range []string{"granted", "neighbour"} {
		running(t, job)
	}
	t.Run("a job's enable-monit-access lets its scope in", func(t *testing.T) { wantProbe(t, "granted", 0, true) })
	t.Run("a vcap job without a grant is refused", firewallNeighbour)
	t.Run("the grant is the agent's per-cgroup rule, never vcap's uid", firewallRules)
	t.Run("a rule naming bpm's scope matches", func(t *testing.T) {
		running(t, "galera") // its hook names its scope: it fails where there is none
		wantProbe(t, "galera", 0, true)
	})
	t.Run("root's reads pass: the agent's, monit summary, vigil status", firewallRoot)
	t.Run("vigil's own commands need no monit API from a job's cgroup", firewallCommands)
	t.Run("a restart's new scope is granted again, the stale rule gone", firewallRestart)
}

// installFirewall sets up the agent's firewall, and the stemcell's
// bosh-enable-monit-access.
func installFirewall(t *testing.T) {
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(agentFirewall)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f: %v\n%s", err, out)
	}
	write(t, vcap+"/bosh/etc/bosh-enable-monit-access", enableMonitAccess, 0o755)
}

// installProbeJob lays out a job whose one process, named as the job,
// runs the probe as vcap after hook (as its pre_start hook) when given.
func installProbeJob(t *testing.T, job, hook string) {
	dir := filepath.Join(vcap, "jobs", job)
	write(t, dir+"/bin/probe", probe, 0o755)
	yml := "processes:\n- name: " + job + "\n  executable: /var/vcap/jobs/" + job + "/bin/probe\n"
	if hook != "" {
		write(t, dir+"/bin/grant", "#!/bin/sh\nexec "+hook+"\n", 0o755)
		yml += "  hooks: {pre_start: /var/vcap/jobs/" + job + "/bin/grant}\n"
	}
	write(t, dir+"/config/bpm.yml", yml, 0o644)
	write(t, filepath.Join(vcap, "monit", "job", "0001_"+job+".monitrc"), "check process "+job+"\n"+
		"  with pidfile /var/vcap/sys/run/bpm/"+job+"/"+job+".pid\n"+
		"  start program \"/var/vcap/jobs/bpm/bin/bpm start "+job+"\"\n"+
		"  stop program \"/var/vcap/jobs/bpm/bin/bpm stop "+job+"\"\n"+
		"  group vcap\n", 0o644)
}

// wantProbe waits for the job's probe after the first n and checks
// whether it got through.
func wantProbe(t *testing.T, job string, n int, reach bool) {
	t.Helper()
	line := probeLine(t, job, n)
	if got := strings.HasPrefix(line, "monit: reached: HTTP/1.") && strings.Contains(line, " 200"); got != reach {
		t.Errorf("%s: %q, want reached %v", job, line, reach)
	}
	scope := cgroupOf(t, running(t, job).ExecPID)
	t.Logf("vmrig: %s (in %s): %s", job, strings.TrimPrefix(scope, "/sys/fs/cgroup/"), line)
}

// probeLine is the job's probe result after its first n, waited for by
// inotify on its log.
func probeLine(t *testing.T, job string, n int) string {
	t.Helper()
	log := filepath.Join(vcap, "sys/log", job, job+".stdout.log")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		b, _ := os.ReadFile(log)
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "monit: ") {
				lines = append(lines, l)
			}
		}
		if len(lines) > n {
			return lines[n]
		}
		watchDir(ctx, filepath.Dir(log), unix.IN_MODIFY|unix.IN_CREATE)
	}
	t.Fatalf("%s: no probe %d in its log", job, n+1)
	return ""
}

// firewallNeighbour: the neighbour, probing again once granted's grant is
// in place (its first probe may have come before it), is refused.
func firewallNeighbour(t *testing.T) {
	probeLine(t, "neighbour", 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := control.NewClient(sock).Signal(ctx, control.SignalRequest{Job: "neighbour", Process: "neighbour", Signal: "USR1"}); err != nil {
		t.Fatal(err)
	}
	wantProbe(t, "neighbour", 1, false)
}

// firewallRules: the jobs chain holds granted's rule for its scope, by
// the agent's tag, and no rule for vcap's uid.
func firewallRules(t *testing.T) {
	chain := sh(t, "nft", "list", "chain", "inet", "bosh_agent", "monit_access_jobs")
	if !strings.Contains(chain, `socket cgroupv2 level 2 "system.slice/runc-bpm-granted.scope" ip daddr 127.0.0.1 tcp dport 2822 accept comment "bosh-monit-access:granted"`) {
		t.Errorf("no cgroup rule for granted's scope:\n%s", chain)
	}
	if strings.Contains(chain, "meta skuid") {
		t.Errorf("a uid rule: every vcap process reaches monit:\n%s", chain)
	}
	logLines(t, "nft", chain)
}

// firewallRoot: root passes the firewall: the agent's read of the API,
// monit summary (which reads the API, as monit's does), vigil status.
func firewallRoot(t *testing.T) {
	if _, err := readMonit(); err != nil {
		t.Errorf("the agent's read as root: %v", err)
	}
	summary := sh(t, vcap+"/bosh/bin/monit", "summary")
	for _, job := range []string{"granted", "neighbour", "galera"} {
		if !regexp.MustCompile(`Process '` + job + `'\s+running\n`).MatchString(summary) {
			t.Errorf("monit summary:\n%s", summary)
		}
	}
	sh(t, vcap+"/bosh/bin/vigil", "status", "--root", vcap)
}

// firewallCommands: from inside a job's scope, with the API dropped for
// that scope (root included), vigil status and bpm answer: they speak to
// the daemon over its control socket.
func firewallCommands(t *testing.T) {
	scope := slice + "/runc-bpm-neighbour.scope"
	sh(t, "nft", "insert", "rule", "inet", "bosh_agent", "monit_access_jobs", "socket", "cgroupv2", "level", "2",
		`"system.slice/runc-bpm-neighbour.scope"`, "tcp", "dport", "2822", "drop", "comment", `"vmrig: no monit API"`)
	defer deleteRules(t, "vmrig: no monit API")
	inside := func(args ...string) *exec.Cmd {
		return exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0/cgroup.procs" && exec "$@"`, scope}, args...)...)
	}
	reach := inside("timeout", "5", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/2822")
	if err := reach.Run(); err == nil {
		t.Fatal("root reached the API from neighbour's scope through the drop: the test proves nothing")
	}
	for _, args := range [][]string{
		{vcap + "/bosh/bin/vigil", "status", "--root", vcap},
		{vcap + "/jobs/bpm/bin/bpm", "list"},
		{vcap + "/jobs/bpm/bin/bpm", "pid", "neighbour"},
	} {
		out, err := inside(args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s from neighbour's scope: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Log("vmrig: from neighbour's scope with 2822 dropped: vigil status, bpm list and bpm pid answer")
}

// firewallRestart: a restart puts granted in a new scope (a new cgroup,
// a new inode); its hook's grant replaces the stale rule.
func firewallRestart(t *testing.T) {
	act(t, control.ActionRestart, "granted")
	wantProbe(t, "granted", 1, true)
	chain := sh(t, "nft", "list", "chain", "inet", "bosh_agent", "monit_access_jobs")
	if n := strings.Count(chain, `"bosh-monit-access:granted"`); n != 1 {
		t.Errorf("%d rules for granted after its restart, want 1:\n%s", n, chain)
	}
}

// deleteRules deletes the jobs' chain's rules with comment.
func deleteRules(t *testing.T, comment string) {
	out := sh(t, "nft", "-a", "list", "chain", "inet", "bosh_agent", "monit_access_jobs")
	re := regexp.MustCompile(`comment "` + regexp.QuoteMeta(comment) + `" # handle (\d+)`)
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		sh(t, "nft", "delete", "rule", "inet", "bosh_agent", "monit_access_jobs", "handle", m[1])
	}
}
