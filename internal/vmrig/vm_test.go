package vmrig

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var vmFlag = flag.Bool("vm", false, "boot the VM and run the scenarios in it (README, Tests)")

// scenario is one test binary run inside the guest, in order.
type scenario struct {
	name string
	pkg  string // the package whose test binary runs, from the module root
	run  string // its -test.run pattern; "" runs all
	// late scenarios do not run from /rig/run: a scenario before them
	// arranges for the guest to run them (at its shutdown), and each must
	// have left its result all the same.
	late bool
	// prepare, when set, puts what the scenario needs besides the
	// binaries into the share, on the host.
	prepare func(t *testing.T, share string)
}

var scenarios = []scenario{
	{name: "target", pkg: "./internal/vmrig/guest", run: "^TestGuestIsTheTarget$"},
	{name: "cgroup-v2", pkg: "./internal/sandbox/cgroup"},
	{name: "scopes", pkg: "./internal/sandbox/scope"},
	{name: "sandbox", pkg: "./internal/sandbox"},
	{name: "proc-isolation", pkg: "./internal/launch", run: "Sandbox|NoIsolation|HostIsolation"},
	{name: "daemon-isolation", pkg: "./internal/backend/daemon", run: "Sandbox|OOM|Enter|HostIsolation"},
	// The release's side first: it leaves the guest as it found it.
	{name: "stemcell-release", pkg: "./internal/vmrig/guest", run: "^TestStemcellRelease$", prepare: renderRelease},
	{name: "stemcell-service", pkg: "./internal/vmrig/guest", run: "^TestStemcellService$"},
	// On the service stemcell-service leaves running, under the agent's
	// monit firewall.
	{name: "stemcell-firewall", pkg: "./internal/vmrig/guest", run: "^TestStemcellFirewall$"},
	{name: "stemcell-shutdown", late: true},
	{name: "systemd-backend", pkg: "./internal/vmrig/guest", run: "^TestSystemdBackend$"},
}

// selected are the scenarios whose names match $VIGIL_VM_ONLY (a regular
// expression, for working on a few; all of them without it).
func selected() []scenario {
	only := regexp.MustCompile(os.Getenv("VIGIL_VM_ONLY"))
	var out []scenario
	for _, s := range scenarios {
		if only.MatchString(s.name) {
			out = append(out, s)
		}
	}
	return out
}

// TestVM builds vigil and the scenarios' test binaries, boots the guest
// (building its image on a cold cache) and reports each scenario as a
// subtest, failing with the guest's output.
func TestVM(t *testing.T) {
	if !*vmFlag {
		t.Skip("the VM scenarios run with -vm: go test -count=1 -timeout=30m ./internal/vmrig -vm (README, Tests)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("vmrig: the VM stage needs root (mmdebstrap --mode=root builds the guest image)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cache := os.Getenv("VIGIL_VM_CACHE")
	if cache == "" {
		cache = "/var/cache/vigil-vmrig"
	}
	began := time.Now()
	img, err := Build(ctx, cache, GuestRecipe(), testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("vmrig: image %s (built now: %v, %s)", img.Key, img.Built, time.Since(began).Round(time.Second))
	share := t.TempDir()
	if err := os.Chmod(share, 0o755); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	buildBinaries(t, filepath.Join(share, "bin"))
	for _, s := range selected() {
		if s.prepare != nil {
			s.prepare(t, share)
		}
	}
	t.Logf("vmrig: binaries built in %s", time.Since(began).Round(time.Second))
	if err := os.WriteFile(filepath.Join(share, "run"), []byte(runScript()), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := boot(ctx, t, img, share)
	if panicked := kernelPanic(share); err == nil && panicked != "" {
		// The guest's kernel, not a scenario, failed (TCG has been seen to
		// run a stray int3 in the scheduler): boot once more, with every
		// scenario again, and fail if it panics a second time.
		t.Logf("vmrig: the guest kernel panicked; booting once more:\n%s", panicked)
		if err := os.RemoveAll(filepath.Join(share, "out")); err != nil {
			t.Fatal(err)
		}
		res, err = boot(ctx, t, img, share)
		if panicked := kernelPanic(share); err == nil && panicked != "" {
			t.Fatalf("vmrig: the guest kernel panicked again:\n%s", panicked)
		}
	}
	t.Logf("vmrig: accel %s (%s)", res.Accel, res.AccelWhy)
	t.Logf("vmrig: booted to the rig unit in %s (guest uptime %s s); whole boot %s",
		res.Booted.Round(100*time.Millisecond), res.GuestUptime, res.Total.Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("%v\nconsole (last lines):\n%s", err, tail(filepath.Join(share, "console.log"), 60))
	}
	for _, s := range selected() {
		t.Run(s.name, func(t *testing.T) { checkScenario(t, share, s) })
	}
}

// boot runs the guest once on img with share, its console in
// share/console.log (a new one each boot).
func boot(ctx context.Context, t *testing.T, img Image, share string) (Result, error) {
	console, err := os.Create(filepath.Join(share, "console.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer console.Close()
	return Machine{Image: img, Share: share, Accel: os.Getenv("VIGIL_VM_ACCEL"), Console: console}.Run(ctx)
}

// kernelPanic is the console's last lines when the guest's kernel
// panicked during the boot, else "".
func kernelPanic(share string) string {
	path := filepath.Join(share, "console.log")
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "Kernel panic - not syncing") {
		return ""
	}
	return tail(path, 40)
}

// checkScenario fails with the scenario's output unless it passed.
func checkScenario(t *testing.T, share string, s scenario) {
	out := filepath.Join(share, "out", s.name)
	rc, err := os.ReadFile(out + ".rc")
	log, _ := os.ReadFile(out + ".log")
	switch {
	case err != nil:
		t.Fatalf("no result (the scenario did not run to its end): %v\n%s\nconsole (last lines):\n%s",
			err, log, tail(filepath.Join(share, "console.log"), 40))
	case strings.TrimSpace(string(rc)) != "0":
		t.Fatalf("exit status %s in the guest:\n%s", strings.TrimSpace(string(rc)), log)
	case !strings.Contains(string(log), "--- PASS"):
		t.Fatalf("ran no test:\n%s", log)
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "vmrig:") || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "ok") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// runScript is /rig/run: each scenario's test binary, run from a copy on
// the guest's own disk, its output and exit status in /rig/out.
func runScript() string {
	var b strings.Builder
	b.WriteString("set -u\nmkdir -p /rig/out /opt/rig\ncp -a /rig/bin/. /opt/rig/\n")
	b.WriteString("export VIGIL_VM_GUEST=1 VIGIL_VM_BIN=/opt/rig VIGIL_VM_OUT=/rig/out VIGIL_VM_RELEASE=/rig/release\n")
	for _, s := range selected() {
		if s.late {
			continue
		}
		args := "-test.v -test.count=1 -test.timeout=8m"
		if s.run != "" {
			args += " -test.run '" + s.run + "'"
		}
		fmt.Fprintf(&b, "echo 'vigil-rig: scenario %s' > /dev/console\n", s.name)
		fmt.Fprintf(&b, "(cd /tmp && /opt/rig/%s %s) > /rig/out/%s.log 2>&1; echo $? > /rig/out/%s.rc\n",
			binary(s.pkg), args, s.name, s.name)
	}
	return b.String()
}

// buildBinaries builds vigil (as README builds it) and each scenario
// package's test binary (with the race detector) into dir.
func buildBinaries(t *testing.T, dir string) {
	root := moduleRoot(t)
	goBuild(t, root, []string{"CGO_ENABLED=0"}, "build", "-o", filepath.Join(dir, "vigil"), "./cmd/vigil")
	done := map[string]bool{}
	for _, s := range selected() {
		if s.late || done[s.pkg] {
			continue
		}
		done[s.pkg] = true
		goBuild(t, root, nil, "test", "-c", "-race", "-o", filepath.Join(dir, binary(s.pkg)), s.pkg)
	}
}

func goBuild(t *testing.T, root string, env []string, args ...string) {
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func moduleRoot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// binary names a package's test binary: ./internal/sandbox/cgroup → sandbox-cgroup.test.
func binary(pkg string) string {
	return strings.ReplaceAll(strings.TrimPrefix(pkg, "./"), "/", "-") + ".test"
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// testLog passes the image build's progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
