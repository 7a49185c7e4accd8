package capability

import "testing"

func TestNumbersAndNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"CHOWN", 0}, {"KILL", 5}, {"NET_BIND_SERVICE", 10}, {"SYS_ADMIN", 21}, {"AUDIT_READ", 37}, {"CHECKPOINT_RESTORE", 40}} {
		if n, ok := Number(tc.name); !ok || n != tc.n {
			t.Errorf("Number(%q) = %d, %v; want %d", tc.name, n, ok, tc.n)
		}
		if got := Name(tc.n); got != tc.name {
			t.Errorf("Name(%d) = %q, want %q", tc.n, got, tc.name)
		}
	}
	for _, bad := range []string{"", "CAP_KILL", "kill", "NOPE"} {
		if _, ok := Number(bad); ok {
			t.Errorf("Number(%q) known", bad)
		}
	}
	if Name(-1) != "" || Name(41) != "" {
		t.Error("a name for an unknown number")
	}
}
