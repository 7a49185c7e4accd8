//go:build conformance

package boshagent

import (
	"context"
	_ "embed"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/vmrig"
)

//go:embed noble-stemcell.sh
var nobleGuest []byte

// noble is the VM's stemcell: the agent's systemd service manager
// (systemctl kill|start monit), eth0 on qemu's user network, its MAC in
// the settings as a CPI puts it there.
var noble = Stemcell{ServiceManager: "systemd", IP: "10.0.2.15", Netmask: "255.255.255.0",
	Gateway: "10.0.2.2", MAC: vmrig.GuestMAC}

// guestRecipe is the VM rig's guest with what the agent's run needs
// besides: nft to read the firewall back, ip for eth0, libcrypt for monit
// 5.2.5.
func guestRecipe() vmrig.Recipe {
	r := vmrig.GuestRecipe()
	for _, p := range []string{"nftables", "iproute2", "libcrypt1"} {
		if !slices.Contains(r.Packages, p) {
			r.Packages = append(r.Packages, p)
		}
	}
	return r
}

// TestNobleVM deploys vigil's release and the stand-in job through the
// real agent in the VM rig's guest (Debian 13, systemd 257, cgroup v2)
// with a Noble stemcell's settings, the agent's mbus reached through
// qemu's port forward: with vigil as the supervisor, then with the
// stemcell's monit 5.2.5. One boot each.
func TestNobleVM(t *testing.T) {
	agent, monit := needBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	cache := os.Getenv("VIGIL_VM_CACHE")
	if cache == "" {
		cache = "/var/cache/vigil-vmrig"
	}
	img, err := vmrig.Build(ctx, cache, guestRecipe(), logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) { runVM(ctx, t, img, agent, monit, v) })
	}
}

func runVM(ctx context.Context, t *testing.T, img vmrig.Image, agent, monit string, v variant) {
	share := t.TempDir()
	if err := os.Chmod(share, 0o755); err != nil {
		t.Fatal(err)
	}
	cert := layRig(t, share, agent, monit, noble, nobleGuest)
	writeFile(t, filepath.Join(share, "run"), []byte("exec /bin/bash /rig/init.sh\n"), 0o755)
	dep, err := NewDeployment(repoRoot(t), vigilBinary(t), "testdata/standin", v.props, noble.Network())
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	c, err := NewClient(strings.Replace(MbusURL, "0.0.0.0:6868", fmt.Sprintf("127.0.0.1:%d", port), 1), []byte(cert.CA), nil)
	if err != nil {
		t.Fatal(err)
	}
	consolePath := filepath.Join(share, "out", "console.log")
	m := vmrig.Machine{Image: img, Share: share, Accel: os.Getenv("VIGIL_VM_ACCEL"), Forward: map[int]int{port: 6868}}
	var g *guest
	ended := false // g's end was received
	defer func() { // a failed run kills the guest
		if g != nil && !ended {
			g.stop()
			<-g.off
		}
	}()
	for attempt := 1; ; attempt++ {
		g, ended = bootGuest(ctx, t, m, consolePath), false
		wctx, wcancel := context.WithTimeout(g.up, 15*time.Minute)
		boot, err := WaitForAgent(wctx, c)
		wcancel()
		if err == nil {
			t.Logf("the agent answered ping %.1f s after qemu started", boot.Seconds())
			break
		}
		g.stop()
		<-g.off
		ended = true
		if b, _ := os.ReadFile(consolePath); attempt == 1 && strings.Contains(string(b), "Kernel panic") {
			// TCG has been seen to panic Debian's kernel at boot (the
			// IO-APIC timer check, under load): once more, as the VM stage.
			t.Logf("the guest's kernel panicked before the agent came up; booting once more:\n%s", tail(consolePath, 8))
			continue
		}
		t.Fatalf("%v\nconsole (last lines):\n%s\nagent log:\n%s", err, tail(consolePath, 30),
			tail(filepath.Join(share, "out", "agent.log"), 30))
	}
	run, derr := Deploy(g.up, c, dep, "Noble VM, "+v.name)
	writeFile(t, filepath.Join(share, "driver-done"), nil, 0o644)
	b := <-g.off
	ended = true
	if run != nil {
		if err := run.Save(filepath.Join(share, "out")); err != nil {
			t.Error(err)
		}
		t.Logf("Noble VM, %s (accel %s, %s):\n%s", v.name, b.res.Accel, b.res.AccelWhy, run.Markdown())
	}
	facts, _ := os.ReadFile(filepath.Join(share, "out", "facts.txt"))
	t.Logf("after the run:\n%s", facts)
	checkFirewall(t, string(facts))
	keep(t, filepath.Join(share, "out"), "vm-"+v.name)
	if b.err != nil {
		t.Errorf("the guest: %v", b.err)
	}
	if derr != nil {
		t.Fatalf("%v\nagent log (last lines):\n%s", derr, tail(filepath.Join(share, "out", "agent.log"), 40))
	}
}

// booted is how a boot ended.
type booted struct {
	res vmrig.Result
	err error
}

// guest is one boot of the VM: off says how it ended, up ends once qemu
// has exited (so that waits on the agent end with the guest), stop kills
// it.
type guest struct {
	off  chan booted
	up   context.Context
	stop context.CancelFunc
}

// bootGuest starts m with its console in consolePath (a new file).
func bootGuest(ctx context.Context, t *testing.T, m vmrig.Machine, consolePath string) *guest {
	console, err := os.Create(consolePath)
	if err != nil {
		t.Fatal(err)
	}
	m.Console = console
	vmctx, stop := context.WithTimeout(ctx, 25*time.Minute)
	up, down := context.WithCancel(vmctx)
	g := &guest{off: make(chan booted, 1), up: up, stop: stop}
	go func() {
		res, err := m.Run(vmctx)
		console.Close()
		down()
		g.off <- booted{res, err}
	}()
	return g
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// logWriter passes the image build's progress to the test log.
type logWriter struct{ t *testing.T }

func (l logWriter) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
