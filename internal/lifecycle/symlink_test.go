package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/testproc"
)

// TestHookLogSymlinkRefused: a job owns its log directory, so it can plant
// a symlink where a hook's log goes; the hook (run as root) refuses to
// open it, does not run, and the symlink's target is untouched.
func TestHookLogSymlinkRefused(t *testing.T) {
	l := newRoot(t)
	ran := filepath.Join(t.TempDir(), "ran")
	writeScript(t, l, "web", "pre-start", "touch "+ran)
	writeScript(t, l, "db", "drain", "echo 0")
	checks := []func(){
		testproc.PlantSymlink(t, filepath.Join(l.LogDir("web"), "pre-start.stdout.log"), false),
		testproc.PlantSymlink(t, filepath.Join(l.LogDir("db"), "drain.stderr.log"), true),
	}
	rep, err := RunHook(context.Background(), HookOptions{Layout: l, Hook: "pre-start", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "Failed Jobs: web") {
		t.Fatalf("pre-start with a planted log: %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the hook ran without its log")
	}
	drep, err := Drain(context.Background(), DrainOptions{Layout: l, Kind: Shutdown, Wait: (&clock{}).wait})
	if err != nil || drep.Err() == nil || !strings.Contains(drep.Err().Error(), "Failed Jobs: db") {
		t.Errorf("drain with a planted log: %v %v", err, drep.Err())
	}
	for _, check := range checks {
		check()
	}
}

// TestPlantedFIFOsNeverBlock: a FIFO the job planted where a hook's or a
// drain's log goes is refused at once (a blocking open would wait for a
// reader forever, past every time limit); the script does not run and the
// report names the job.
func TestPlantedFIFOsNeverBlock(t *testing.T) {
	l := newRoot(t)
	ran := filepath.Join(t.TempDir(), "ran")
	writeScript(t, l, "web", "pre-start", "touch "+ran)
	writeScript(t, l, "db", "drain", "echo 0")
	testproc.PlantFIFO(t, filepath.Join(l.LogDir("web"), "pre-start.stdout.log"))
	testproc.PlantFIFO(t, filepath.Join(l.LogDir("db"), "drain.stdout.log"))
	var rep, drep Report
	var err, derr error
	testproc.Within(t, "the pre-start hooks", func() {
		rep, err = RunHook(context.Background(), HookOptions{Layout: l, Hook: "pre-start", Timeout: time.Minute})
	})
	testproc.Within(t, "the drain", func() {
		drep, derr = Drain(context.Background(), DrainOptions{Layout: l, Kind: Shutdown, Budget: time.Minute, Wait: (&clock{}).wait})
	})
	if err != nil || rep.Err() == nil || !strings.Contains(rep.Err().Error(), "Failed Jobs: web") ||
		!strings.Contains(rep.Err().Error(), "not a regular file") {
		t.Errorf("pre-start with a planted FIFO: %v %v", err, rep.Err())
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the hook ran without its log")
	}
	if derr != nil || drep.Err() == nil || !strings.Contains(drep.Err().Error(), "Failed Jobs: db") {
		t.Errorf("drain with a planted FIFO: %v %v", derr, drep.Err())
	}
}
