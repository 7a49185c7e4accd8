package setup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/sandbox"
	"github.com/vigil-bosh/vigil/job"
)

func mountsByDest(ms []sandbox.Mount) map[string]sandbox.Mount {
	out := map[string]sandbox.Mount{}
	for _, m := range ms {
		out[m.Dest] = m
	}
	return out
}

func TestMountTable(t *testing.T) {
	root := t.TempDir()
	l, err := boshpath.New(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{l.JobDir("web"), l.JobDir("other"), l.PackagesDir(), filepath.Join(root, "data", "sock", "a"),
		filepath.Join(root, "data", "sock", "b"), filepath.Join(root, "data", "web", "inside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := job.Process{Job: "web", Name: "web", EphemeralDisk: true, PersistentDisk: true,
		AdditionalVolumes: []job.Volume{{Path: filepath.Join(root, "data", "shared"), Writable: true, AllowExecutions: true}},
		Unsafe: job.Unsafe{UnrestrictedVolumes: []job.Volume{
			{Path: filepath.Join(root, "data", "sock", "*")},    // two matches
			{Path: filepath.Join(root, "data", "web", "*")},     // under the data dir: dropped
			{Path: filepath.Join(root, "data", "missing", "*")}, // no match: skipped
		}}}
	ms := mountTable(l, p)
	got := mountsByDest(ms)
	check := func(dest string, ro, noexec bool) {
		t.Helper()
		m, ok := got[dest]
		if !ok {
			t.Errorf("no mount at %s", dest)
			return
		}
		if m.ReadOnly != ro || m.NoExec != noexec || (m.Kind == sandbox.KindBind && (!m.NoSuid || !m.NoDev)) {
			t.Errorf("%s: %+v, want ro=%v noexec=%v nosuid nodev", dest, m, ro, noexec)
		}
	}
	check(l.JobDir("web"), true, false)
	check(l.PackagesDir(), true, false)
	check(l.LogDir("web"), false, true)
	check(l.DataDir("web"), false, true)
	check(l.StoreDir("web"), false, true)
	check(l.TmpDir("web"), false, true)
	check("/tmp", false, true)
	check("/var/tmp", false, true)
	check(filepath.Join(root, "data", "shared"), false, false)
	check(filepath.Join(root, "data", "sock", "a"), true, true)
	check(filepath.Join(root, "data", "sock", "b"), true, true)
	check("/sys", true, true)
	// bpm's places for them too, below /var/vcap (the root is elsewhere).
	check("/var/vcap/jobs/web", true, false)
	check("/var/vcap/packages", true, false)
	check("/var/vcap/sys/log/web", false, true)
	check("/var/vcap/data/web", false, true)
	check("/var/vcap/store/web", false, true)
	check("/var/vcap/data/web/tmp", false, true)
	if got["/var/vcap/sys/log/web"].Source != l.LogDir("web") {
		t.Errorf("/var/vcap/sys/log/web comes from %s", got["/var/vcap/sys/log/web"].Source)
	}
	if _, ok := got[l.JobDir("other")]; ok {
		t.Error("another job's directory is mounted")
	}
	if _, ok := got[filepath.Join(root, "data", "web", "inside")]; ok {
		t.Error("an unrestricted volume under the data dir was kept")
	}
	if got["/tmp"].Source != l.TmpDir("web") {
		t.Errorf("/tmp comes from %s", got["/tmp"].Source)
	}
	for i := 1; i < len(ms); i++ {
		if depth(ms[i].Dest) < depth(ms[i-1].Dest) {
			t.Fatalf("%s comes after the deeper %s", ms[i].Dest, ms[i-1].Dest)
		}
	}
	p.Unsafe.Privileged = true
	for _, m := range mountTable(l, p) {
		if m.Kind == sandbox.KindBind && m.NoSuid && !strings.HasPrefix(m.Dest, "/dev/") {
			t.Errorf("privileged mount %s keeps nosuid", m.Dest)
		}
	}
}

func TestIdentity(t *testing.T) {
	uid, gid, warns, err := identity("root:nogroup", "")
	if err != nil || uid != 0 || gid == 0 || len(warns) != 0 {
		t.Errorf("root:nogroup: %d %d %v %v", uid, gid, warns, err)
	}
	_, gid, warns, err = identity("root:no-such-group-here", "")
	if err != nil || gid != 0 || len(warns) != 1 || !strings.Contains(warns[0], "group no-such-group-here does not exist") {
		t.Errorf("missing group: gid %d, warnings %v, %v", gid, warns, err)
	}
	_, _, _, err = identity("", "no-such-user-here")
	if err == nil || err.Error() != "user no-such-user-here does not exist" {
		t.Errorf("missing user: %v", err)
	}
}

// envExhausted makes the test binary the child of TestIdentityFailsClosed.
const envExhausted = "SANDBOX_TEST_NO_DESCRIPTORS"

// TestIdentityFailsClosed: a lookup that fails for any reason but "no such
// user" (here: no descriptor left to open the passwd file with, as a flood
// of connections leaves a daemon) fails, instead of passing for a missing
// user and running the process as nobody. The lookups run in a child,
// whose descriptor limit is lowered and then used up.
func TestIdentityFailsClosed(t *testing.T) {
	if os.Getenv(envExhausted) != "" {
		exhaustDescriptors(t)
		for _, spec := range []string{"root", "root:root"} {
			uid, gid, warns, err := identity(spec, "")
			fmt.Printf("identity %s: %d %d %v %v\n", spec, uid, gid, warns, err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdentityFailsClosed$", "-test.v")
	cmd.Env = append(os.Environ(), envExhausted+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, spec := range []string{"root", "root:root"} {
		want := fmt.Sprintf("identity %s: 0 0 [] look up user root: ", spec)
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "too many open files") {
			t.Errorf("identity %s without descriptors: want an error, got\n%s", spec, out)
		}
	}
}

// exhaustDescriptors lowers the descriptor limit and opens /dev/null until
// no descriptor is left.
func exhaustDescriptors(t *testing.T) {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 64, Max: 64}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Open(os.DevNull); err != nil {
			return
		}
	}
}

func TestCapNumbers(t *testing.T) {
	nums, unknown := sandbox.CapNumbers([]string{"NET_BIND_SERVICE", "CAP_SYS_ADMIN", "bogus"})
	if len(nums) != 2 || nums[0] != 10 || nums[1] != 21 || len(unknown) != 1 {
		t.Errorf("got %v %v", nums, unknown)
	}
	if n := len(sandbox.PrivilegedCaps()); n != 38 {
		t.Errorf("privileged set has %d capabilities, want Docker's 38", n)
	}
}
