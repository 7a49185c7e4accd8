package layering

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// heavy are modules the vigil binary must not link: Go initialises every
// linked package in every process of the binary (each per-process init,
// each command), and these cost the most of it while the binary needs
// none of them (package metrics writes Prometheus' text format itself).
// Tests may use them: Prometheus' own parser checks the format.
var heavy = []string{
	"github.com/prometheus/client_golang/",
	"github.com/prometheus/client_model/",
	"github.com/prometheus/common/",
	"github.com/prometheus/procfs",
	"google.golang.org/protobuf/",
	"runtime/metrics", // its initialisation builds the GODEBUG descriptions: 17 KiB private in every process
}

// TestBinaryLinksNothingHeavy lists what the vigil binary links (`go list
// -deps`, test files excluded) and fails on each package of heavy.
func TestBinaryLinksNothingHeavy(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"cmd/vigil").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"internal/metrics") {
		t.Fatalf("go list -deps lists no %smetrics: %q...", module, deps[:min(len(deps), 5)])
	}
	for _, d := range deps {
		for _, h := range heavy {
			if strings.HasPrefix(d, h) {
				t.Errorf("cmd/vigil links %s", d)
			}
		}
	}
}

// TestInitLinksNoReflectingJSON: the init's package, and all it imports,
// read and write their messages with internal/jsonwire: encoding/json's
// reflection caches for the launch and the spec were about 85 KiB private
// memory in every init.
func TestInitLinksNoReflectingJSON(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"internal/launch/procinit").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"internal/jsonwire") {
		t.Fatalf("go list -deps lists no %sinternal/jsonwire: %q...", module, deps[:min(len(deps), 5)])
	}
	if slices.Contains(deps, "encoding/json") {
		t.Error("procinit links encoding/json")
	}
}
