package testproc

import (
	"os"
	"strings"
	"testing"
)

// LastCPU is the highest CPU the calling process may run on (the end of
// its Cpus_allowed_list), for tests that pin a process to one CPU that
// is not every CPU. It fails t when the list cannot be read.
func LastCPU(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			items := strings.Split(strings.TrimSpace(v), ",")
			last := items[len(items)-1]
			if _, hi, ok := strings.Cut(last, "-"); ok {
				return hi
			}
			return last
		}
	}
	t.Fatal("no Cpus_allowed_list in /proc/self/status")
	return ""
}
