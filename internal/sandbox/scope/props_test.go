package scope

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/vigil-bosh/vigil/internal/sandbox/cgroup"
)

func TestCPUMask(t *testing.T) {
	for _, c := range []struct {
		set  string
		want []byte
	}{
		{"0", []byte{0x01}},
		{"0-1,4", []byte{0x13}},
		{"3,9", []byte{0x08, 0x02}},
		{"8-15", []byte{0x00, 0xff}},
		{" 2 , 5-6", []byte{0x64}},
	} {
		got, err := cpuMask(c.set)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("cpuMask(%q) = %x, %v; want %x", c.set, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "a", "2-1", "-1", "0-", "1,,2", "9000"} {
		if got, err := cpuMask(bad); err == nil {
			t.Errorf("cpuMask(%q) = %x, want an error", bad, got)
		}
	}
}

// TestProperties: the scope's properties are runc's for a bpm container
// (slice, the pid, delegation, no default dependencies), and the limits
// in systemd's units.
func TestProperties(t *testing.T) {
	mem, pids, weight, quota := uint64(64<<20), int64(20), uint64(50), uint64(150)
	got, err := properties("runc-bpm-web.scope", 42, cgroup.Limits{Memory: &mem, Pids: &pids,
		CPUWeight: &weight, CPUQuota: &quota, CPUSet: "0-1", CPUSetMems: "0"}, []string{"vigil.service"}, 257)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"Description":         "vigil: runc-bpm-web.scope",
		"Slice":               "system.slice",
		"PIDs":                []uint32{42},
		"Delegate":            true,
		"DefaultDependencies": false,
		"CollectMode":         "inactive-or-failed",
		"OOMPolicy":           "continue",
		"Before":              []string{"vigil.service"},
		"MemoryMax":           uint64(64 << 20),
		"MemorySwapMax":       uint64(0),
		"TasksMax":            uint64(20),
		"CPUWeight":           uint64(50),
		"CPUQuotaPerSecUSec":  uint64(1500000),
		"AllowedCPUs":         []byte{0x03},
		"AllowedMemoryNodes":  []byte{0x01},
	}
	seen := map[string]bool{}
	for _, p := range got {
		seen[p.Name] = true
		if w, ok := want[p.Name]; !ok || !reflect.DeepEqual(p.Value.Value(), w) {
			t.Errorf("%s = %#v, want %#v", p.Name, p.Value.Value(), w)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("no %s", name)
		}
	}
	// The signature systemd's StartTransientUnit takes.
	if sig := dbus.SignatureOf(got, []aux{}).String(); sig != "a(sv)a(sa(sv))" {
		t.Errorf("signature %s", sig)
	}
	bare, _ := properties("x.scope", 1, cgroup.Limits{}, nil, 252)
	for _, p := range bare {
		switch p.Name {
		case "OOMPolicy", "Before", "MemoryMax", "MemorySwapMax", "TasksMax", "CPUWeight", "CPUQuotaPerSecUSec", "AllowedCPUs", "AllowedMemoryNodes":
			t.Errorf("%s set without a limit, a caller's unit or a systemd that takes it", p.Name)
		}
	}
	if _, err := properties("x.scope", 1, cgroup.Limits{CPUSet: "x"}, nil, 257); err == nil {
		t.Error("a bad cpuset makes properties")
	}
}

func TestDecodeSignals(t *testing.T) {
	unit, ev, ok := decode(&dbus.Signal{Path: managerPath, Name: manager + ".JobRemoved",
		Body: []any{uint32(7), dbus.ObjectPath("/org/freedesktop/systemd1/job/7"), "runc-bpm-web.scope", "done"}})
	if !ok || unit != "runc-bpm-web.scope" || ev.job != "/org/freedesktop/systemd1/job/7" || ev.result != "done" || ev.removed {
		t.Errorf("JobRemoved: %q %+v %v", unit, ev, ok)
	}
	unit, ev, ok = decode(&dbus.Signal{Path: managerPath, Name: manager + ".UnitRemoved",
		Body: []any{"runc-bpm-web.scope", dbus.ObjectPath("/org/freedesktop/systemd1/unit/x")}})
	if !ok || unit != "runc-bpm-web.scope" || !ev.removed {
		t.Errorf("UnitRemoved: %q %+v %v", unit, ev, ok)
	}
	for _, s := range []*dbus.Signal{
		{Path: "/org/freedesktop/systemd1/unit/x", Name: manager + ".UnitRemoved", Body: []any{"a", dbus.ObjectPath("/")}},
		{Path: managerPath, Name: manager + ".JobNew", Body: []any{uint32(1), dbus.ObjectPath("/"), "a"}},
		{Path: managerPath, Name: manager + ".JobRemoved", Body: []any{"short"}},
	} {
		if _, _, ok := decode(s); ok {
			t.Errorf("decoded %+v", s)
		}
	}
}
