//go:build conformance

package boshagent

import (
	"bufio"
	"context"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

//go:embed runit-stemcell.sh
var runitInit []byte

// jammy is the runit rig's stemcell: runit's sv, eth0 on a veth.
var jammy = Stemcell{IP: "10.0.0.10", Netmask: "255.255.255.0", Gateway: "10.0.0.1"}

// TestRunitStemcell deploys vigil's release and the stand-in job through
// the real agent on a runit stemcell's layout, in private namespaces of
// this machine: with vigil as the supervisor, then with the stemcell's
// monit 5.2.5 (vigil.supervisor false).
func TestRunitStemcell(t *testing.T) {
	agent, monit := needBinaries(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { runRunit(t, agent, monit, v) })
	}
}

func runRunit(t *testing.T, agent, monit string, v variant) {
	rig := t.TempDir()
	cert := layRig(t, rig, agent, monit, jammy, runitInit)
	dep, err := NewDeployment(repoRoot(t), vigilBinary(t), "testdata/standin", v.props, jammy.Network())
	if err != nil {
		t.Fatal(err)
	}

	ns := startNamespaces(t, rig)
	netns, err := os.Open("/proc/" + strconv.Itoa(ns) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer netns.Close()
	c, err := NewClient(strings.Replace(MbusURL, "0.0.0.0", "127.0.0.1", 1), []byte(cert.CA), DialIn(netns))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	boot, err := WaitForAgent(wctx, c)
	wcancel()
	if err != nil {
		t.Fatalf("%v\nagent log (last lines):\n%s", err, tail(filepath.Join(rig, "out", "agent.log"), 30))
	}
	t.Logf("the agent answered ping %.1f s after the namespaces started", boot.Seconds())
	run, err := Deploy(ctx, c, dep, "runit, "+v.name)
	if run != nil {
		if serr := run.Save(filepath.Join(rig, "out")); serr != nil {
			t.Error(serr)
		}
		t.Logf("runit, %s:\n%s", v.name, run.Markdown())
	}
	facts := inNamespaces(ns, `set +e
for f in /var/vcap/sys/log/standin/hooks.log /var/vcap/sys/log/standin/standin.stdout.log; do echo "== $f"; cat $f; done
echo "== the job's rules while it ran (post-start)"; cat /var/vcap/sys/log/standin/monit-access-jobs.txt
echo "== enable-monit-access (standin.stderr.log)"; grep -hi -e 'rule' -e 'cgroup' -e 'falling' /var/vcap/sys/log/standin/standin.stderr.log
echo "== nft list table inet bosh_agent"; nft list table inet bosh_agent
echo "== /var/vcap/bosh/bin/monit"; head -c 300 /var/vcap/bosh/bin/monit | grep -a -m3 -e '^#' -e 'STEMCELL=' || echo "(a binary)"
echo "== the monit service's process"; ps -o pid,args -p "$(cat /etc/service/monit/supervise/pid)"
`)
	writeFile(t, filepath.Join(rig, "out", "facts.txt"), []byte(facts), 0o644)
	t.Logf("after the run:\n%s", facts)
	checkFirewall(t, facts)
	keep(t, filepath.Join(rig, "out"), "runit-"+v.name)
	if err != nil {
		t.Fatalf("%v\nagent log (last lines):\n%s", err, tail(filepath.Join(rig, "out", "agent.log"), 40))
	}
}

// startNamespaces starts the rig's init as PID 1 of new namespaces and
// returns its pid (on this machine) once it says the agent runs; the
// namespaces die with it at the test's end (SIGKILL to a PID namespace's
// init kills every process in it).
func startNamespaces(t *testing.T, rig string) int {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	log, err := os.Create(filepath.Join(rig, "out", "init.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("unshare", "--mount", "--net", "--uts", "--pid", "--fork", "--mount-proc",
		"bash", filepath.Join(rig, "init.sh"))
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "RIG=" + rig, "IP=" + jammy.IP}
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = log, log, []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	init := 0
	t.Cleanup(func() {
		if init > 0 {
			syscall.Kill(init, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	line, _ := bufio.NewReader(r).ReadString('\n') // "ready", or EOF when the init failed
	children, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/" + strconv.Itoa(cmd.Process.Pid) + "/children")
	init, _ = strconv.Atoi(strings.TrimSpace(string(children)))
	if line != "ready\n" || init == 0 {
		cmd.Process.Kill()
		t.Fatalf("the rig's init did not start the agent (%q, pid %q):\n%s", line, children, tail(filepath.Join(rig, "out", "init.log"), 40))
	}
	return init
}

// inNamespaces runs a bash script in the rig's namespaces and returns its
// output, errors included.
func inNamespaces(pid int, script string) string {
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-m", "-n", "-p", "-u", "--", "bash", "-c", script).CombinedOutput()
	if err != nil {
		return string(out) + "(" + err.Error() + ")\n"
	}
	return string(out)
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
