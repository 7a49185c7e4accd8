package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestOwnPackagesInitialiseNothing: Go runs the initialisation of every
// package linked into vigil in every process of it (each per-process init,
// each command), so no package of vigil's own may allocate there: a table
// or a regexp it needs is built when it is used. The runtime's own trace
// (GODEBUG=inittrace=1) tells each package's allocations.
func TestOwnPackagesInitialiseNothing(t *testing.T) {
	cmd := exec.Command(vigilBin, "version")
	cmd.Env = []string{"GODEBUG=inittrace=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("vigil version: %v\n%s", err, out)
	}
	traced := 0
	for line := range strings.Lines(string(out)) {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		traced++
		if !strings.HasPrefix(f[1], "github.com/vigil-bosh/vigil/") {
			continue
		}
		if allocs, _ := strconv.Atoi(f[9]); allocs > 0 {
			t.Errorf("%s allocates %s bytes in %d allocations at every process's start", f[1], f[7], allocs)
		}
	}
	if traced == 0 {
		t.Fatalf("no initialisation traced:\n%s", out)
	}
}
