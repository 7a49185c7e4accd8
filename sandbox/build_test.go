package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/job"
)

func mountsByDest(ms []Mount) map[string]Mount {
	out := map[string]Mount{}
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
		if m.ReadOnly != ro || m.NoExec != noexec || (m.Kind == KindBind && (!m.NoSuid || !m.NoDev)) {
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
		if m.Kind == KindBind && m.NoSuid && !strings.HasPrefix(m.Dest, "/dev/") {
			t.Errorf("privileged mount %s keeps nosuid", m.Dest)
		}
	}
}

func TestIdentity(t *testing.T) {
	uid, gid, warns := identity("root:nogroup", "")
	if uid != 0 || gid == 0 || len(warns) != 0 {
		t.Errorf("root:nogroup: %d %d %v", uid, gid, warns)
	}
	uid, _, warns = identity("", "no-such-user-here")
	if uid != fallbackUID || len(warns) != 1 || !strings.Contains(warns[0], "no-such-user-here") {
		t.Errorf("missing user: uid %d, warnings %v", uid, warns)
	}
}

func TestCapNumbers(t *testing.T) {
	nums, unknown := CapNumbers([]string{"NET_BIND_SERVICE", "CAP_SYS_ADMIN", "bogus"})
	if len(nums) != 2 || nums[0] != 10 || nums[1] != 21 || len(unknown) != 1 {
		t.Errorf("got %v %v", nums, unknown)
	}
	if n := len(privilegedCaps()); n != 38 {
		t.Errorf("privileged set has %d capabilities, want Docker's 38", n)
	}
}
