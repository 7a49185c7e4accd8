package vmrig

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Machine is one boot of an image. Share is a host directory the guest
// mounts read-write at /rig (virtio 9p); the image's rig unit runs
// /rig/run and powers the guest off when it ends.
type Machine struct {
	Image   Image
	Share   string
	Memory  int       // MiB; 0 means 2048
	CPUs    int       // 0 means 2
	Accel   string    // "kvm", "tcg", or "" (choose; see ChooseAccel)
	Console io.Writer // the guest's serial console; nil discards it
	// Forward gives the guest a NIC (eth0, MAC GuestMAC) on qemu's user
	// network (the guest is 10.0.2.15/24, its gateway 10.0.2.2, no DHCP
	// server asked) and forwards each host port, on 127.0.0.1, to the
	// guest's TCP port it maps to. Without it the guest has no network.
	Forward map[int]int
}

// GuestMAC is the MAC address of the guest's NIC when Machine.Forward
// gives it one.
const GuestMAC = "52:54:00:12:34:56"

// Result describes a boot that ran to its end.
type Result struct {
	Accel, AccelWhy string
	// Booted is the time from qemu's start to the rig unit's start
	// (systemd up to multi-user), Total until qemu exited.
	Booted, Total time.Duration
	// GuestUptime is the guest's own uptime when the rig unit started.
	GuestUptime string
}

// StartMarker is the line the rig unit writes to the console as it starts.
const StartMarker = "vigil-rig: start uptime="

// Run boots the machine and waits until the guest powers off or ctx is
// done (then qemu is killed and Run returns ctx's error). An error means
// the guest did not run to its end: the caller reads the outcome of what
// it ran from the share.
func (m Machine) Run(ctx context.Context) (Result, error) {
	var res Result
	res.Accel, res.AccelWhy = ChooseAccel(m.Accel)
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return res, fmt.Errorf("vmrig: qemu cannot run here: qemu-system-x86_64 not found (apt-get install qemu-system-x86): %w", err)
	}
	cmd := exec.CommandContext(ctx, qemu, m.args(res.Accel)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, fmt.Errorf("vmrig: %w", err)
	}
	cmd.Stderr = cmd.Stdout // qemu's own complaints join the console
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("vmrig: qemu cannot run here: %w", err)
	}
	console := m.Console
	if console == nil {
		console = io.Discard
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, StartMarker); i >= 0 && res.Booted == 0 {
			res.Booted = time.Since(start)
			res.GuestUptime = strings.TrimSpace(line[i+len(StartMarker):])
		}
		fmt.Fprintln(console, line)
	}
	err = cmd.Wait()
	res.Total = time.Since(start)
	if ctx.Err() != nil {
		return res, fmt.Errorf("vmrig: the guest did not power off in time: %w", ctx.Err())
	}
	if err != nil {
		return res, fmt.Errorf("vmrig: qemu: %w", err)
	}
	if res.Booted == 0 {
		return res, errors.New("vmrig: the guest powered off before the rig unit started (see its console)")
	}
	return res, nil
}

// args is qemu's command line: no firmware frills, no network (but the
// forwarded ports' NIC), the disk on a snapshot, the share over virtio 9p,
// the console on stdout.
func (m Machine) args(accel string) []string {
	mem, cpus := m.Memory, m.CPUs
	if mem <= 0 {
		mem = 2048
	}
	if cpus <= 0 {
		cpus = 2
	}
	a := []string{"-nodefaults", "-no-user-config", "-display", "none", "-vga", "none",
		"-machine", "q35", "-m", strconv.Itoa(mem), "-smp", strconv.Itoa(cpus),
		"-serial", "stdio", "-monitor", "none", "-no-reboot",
		"-kernel", m.Image.Kernel, "-initrd", m.Image.Initrd,
		"-append", "console=ttyS0 root=/dev/vda rw rootfstype=ext4 panic=-1 net.ifnames=0 quiet " +
			"systemd.show_status=error",
		"-drive", "file=" + m.Image.Disk + ",format=raw,if=virtio,snapshot=on",
		"-virtfs", "local,path=" + m.Share + ",mount_tag=rig,security_model=none,id=rig",
		"-device", "virtio-rng-pci",
	}
	if len(m.Forward) > 0 {
		hosts := make([]int, 0, len(m.Forward))
		for h := range m.Forward {
			hosts = append(hosts, h)
		}
		slices.Sort(hosts)
		netdev := "user,id=net0"
		for _, h := range hosts {
			netdev += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", h, m.Forward[h])
		}
		a = append(a, "-netdev", netdev, "-device", "virtio-net-pci,netdev=net0,mac="+GuestMAC)
	}
	if accel == "kvm" {
		return append(a, "-accel", "kvm", "-cpu", "host")
	}
	return append(a, "-accel", "tcg,thread=multi", "-cpu", "max")
}

// ChooseAccel picks KVM or TCG: want ("kvm" or "tcg") when given, else KVM
// only where /dev/kvm opens and the CPU shows hardware virtualisation
// (vmx or svm), since a /dev/kvm without it (a software hypervisor such as
// PVM inside a microVM) must emulate an unmodified guest kernel: slower
// than TCG and failing on instructions it cannot emulate. It says why.
func ChooseAccel(want string) (accel, why string) {
	switch want {
	case "kvm", "tcg":
		return want, "asked for (VIGIL_VM_ACCEL)"
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return "tcg", fmt.Sprintf("no usable /dev/kvm (%v)", err)
	}
	f.Close()
	if !hardwareVirt() {
		why := "/dev/kvm is not backed by hardware virtualisation (no vmx or svm flag in /proc/cpuinfo)"
		if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
			why = "/dev/kvm is kvm_pvm, a software hypervisor (no vmx or svm flag in /proc/cpuinfo): " +
				"it emulates the unmodified Debian kernel, slower than TCG, and stops with " +
				"\"KVM internal error ... emulation failure\" (lock cmpxchg16b, xrstor)"
		}
		return "tcg", why
	}
	return "kvm", "/dev/kvm with hardware virtualisation"
}

func hardwareVirt() bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			for _, f := range strings.Fields(v) {
				if f == "vmx" || f == "svm" {
					return true
				}
			}
			return false
		}
	}
	return false
}
