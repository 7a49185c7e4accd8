package backend

import (
	"os"
	"testing"

	"github.com/vigil-bosh/vigil/control"
)

// TestUsagePassShared: statuses within a pass's second share its figures,
// descriptor counts included: nothing is read in /proc again for them.
func TestUsagePassShared(t *testing.T) {
	self := os.Getpid()
	ps := func() []control.ProcessStatus {
		return []control.ProcessStatus{{Job: "j", Process: "p", State: "running", PID: self, ExecPID: self}}
	}
	var usage UsageCache
	first := ps()
	if err := usage.Fill(first); err != nil || first[0].Usage == nil {
		t.Fatalf("fill: %v, %+v", err, first[0].Usage)
	}
	// Open more descriptors: a fresh count would see them.
	var files []*os.File
	for range 5 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	second := ps()
	if err := usage.Fill(second); err != nil {
		t.Fatal(err)
	}
	if second[0].Usage.OpenFDs != first[0].Usage.OpenFDs {
		t.Fatalf("the second status counted descriptors again: %d, then %d", first[0].Usage.OpenFDs, second[0].Usage.OpenFDs)
	}
}
