package main

import (
	"os/exec"
	"strings"
	"testing"
)

// initialised runs vigil with args under GODEBUG=inittrace=1 and returns the
// packages whose initialisation ran. The init is run without its control
// socket, so it stops right after the runtime's start.
func initialised(t *testing.T, args ...string) map[string]bool {
	t.Helper()
	cmd := exec.Command(vigilBin, args...)
	cmd.Env = []string{"GODEBUG=inittrace=1", "PATH=/usr/bin:/bin"}
	out, _ := cmd.CombinedOutput() // the exit status varies; the trace is what counts
	pkgs := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" && strings.HasPrefix(f[2], "@") {
			pkgs[f[1]] = true
		}
	}
	if len(pkgs) == 0 {
		t.Fatalf("vigil %s printed no init trace:\n%s", strings.Join(args, " "), out)
	}
	return pkgs
}

// nonStandard returns the packages outside the standard library (the first
// path element has a dot; vendored standard packages do not count).
func nonStandard(pkgs map[string]bool) []string {
	var out []string
	for p := range pkgs {
		if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
			out = append(out, p)
		}
	}
	return out
}

// TestInitInitialisesOnlyItsOwnPackages: the per-process init initialises
// no package of the module graph outside procinit's own imports, and
// commands that cannot serve /metrics leave the metrics library alone,
// while a command with --http initialises it.
func TestInitInitialisesOnlyItsOwnPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/vigil-bosh/vigil/procinit").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	own := map[string]bool{"github.com/vigil-bosh/vigil/internal/pkginit": true}
	for _, p := range strings.Fields(string(out)) {
		own[p] = true
	}
	for _, args := range [][]string{{"init"}, {"init", "--enter"}} {
		for _, p := range nonStandard(initialised(t, args...)) {
			if !own[p] {
				t.Errorf("vigil %s initialised %s, which procinit does not import", strings.Join(args, " "), p)
			}
		}
	}
	metricsLib := func(p string) bool {
		return strings.HasPrefix(p, "github.com/prometheus/") || strings.HasPrefix(p, "google.golang.org/protobuf/")
	}
	for _, args := range [][]string{{"status", "--root", t.TempDir()}, {"bpm", "pid", "web"}, {"monit", "summary"}, {"version"}} {
		for _, p := range nonStandard(initialised(t, args...)) {
			if metricsLib(p) {
				t.Errorf("vigil %s initialised %s of the metrics library", strings.Join(args, " "), p)
			}
		}
	}
	if !initialised(t, "version", "--http", "127.0.0.1:0")["github.com/prometheus/client_golang/prometheus"] {
		t.Error("a command with --http did not initialise the Prometheus client")
	}
}
