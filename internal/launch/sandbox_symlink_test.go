package launch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/job"
)

// TestSandboxPlantedVolumeSymlinkRefused: the job's user replaces a
// writable additional volume (a directory it owns) with a symlink to a
// directory it must never reach. The next start fails, naming the link and
// its owner, and the victim is never mounted; once the volume is a
// directory again, the job starts and writes there.
func TestSandboxPlantedVolumeSymlinkRefused(t *testing.T) {
	s := newSandboxed(t)
	l := s.layout
	victim := filepath.Join(l.Root(), "victim")
	marker := filepath.Join(victim, "marker")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte("root's"), 0o644); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(l.DataDir("job"), "foo")
	if err := os.MkdirAll(l.DataDir("job"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, vol); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(vol, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	p := s.process("vol", "inspect", testproc.EnvWrite+"="+vol+"/x", testproc.EnvList+"="+vol)

	// Refused twice over: on the host, where the start hands the volume
	// over (so nothing is created, chmodded or chowned through the link),
	// and, for a mount_only volume that is not handed over, in the helper
	// that mounts it.
	p.AdditionalVolumes = []job.Volume{{Path: vol, Writable: true}}
	self, _ := os.Executable()
	r := NewRunner(p, Options{Layout: l, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, User: s.user})
	owned := fmt.Sprintf("%s is a symlink owned by uid 65534: not followed", vol)
	if pr, err := r.Start(context.Background()); err == nil {
		pr.ForceKill()
		for range pr.Events() {
		}
		t.Fatal("started with a planted symlink as its volume")
	} else if !strings.Contains(err.Error(), "failed to create volume "+vol+": "+owned) {
		t.Errorf("start failed with %q, want it to say %q", err, owned)
	}
	assertVictimUntouched(t, victim)

	p.AdditionalVolumes = []job.Volume{{Path: vol, Writable: true, MountOnly: true}}
	_, pr := s.start(p)
	ev := next(t, pr)
	if ev.Running {
		see := s.see(nil)
		t.Fatalf("started through a planted symlink: it lists %q and writing gives %q",
			see["list "+vol], see["write "+vol+"/x"])
	}
	if want := "mount " + vol + ": " + owned; !strings.Contains(ev.Exit.Err, want) {
		t.Errorf("start failed with %q, want it to say %q", ev.Exit.Err, want)
	}
	t.Logf("refused: %s", ev.Exit.Err)
	assertVictimUntouched(t, victim)

	p.AdditionalVolumes = []job.Volume{{Path: vol, Writable: true}}
	if err := os.Remove(vol); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(vol, 0o700); err != nil {
		t.Fatal(err)
	}
	_, pr = s.start(p)
	see := s.see(pr)
	if got := see["write "+vol+"/x"]; got != "ok" {
		t.Errorf("writing into the volume: %q", got)
	}
	if _, err := os.Stat(filepath.Join(vol, "x")); err != nil {
		t.Errorf("the write did not land in the volume: %v", err)
	}
	assertVictimUntouched(t, victim)
	s.exitOf(pr)
}

func assertVictimUntouched(t *testing.T, victim string) {
	t.Helper()
	entries, err := os.ReadDir(victim)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "marker" {
		t.Errorf("the victim directory holds %v, want only its marker", entries)
	}
	if b, err := os.ReadFile(filepath.Join(victim, "marker")); err != nil || string(b) != "root's" {
		t.Errorf("the victim's marker holds %q (%v)", b, err)
	}
}

// TestSandboxRootOwnedSymlinkSourceFollowed: BOSH lays a job's directory
// out as a root-owned symlink (jobs/JOB -> data/jobs/JOB/HASH); a bind
// source through such a link still mounts, and the job sees its files.
func TestSandboxRootOwnedSymlinkSourceFollowed(t *testing.T) {
	s := newSandboxed(t)
	l := s.layout
	real := filepath.Join(l.Root(), "data", "jobs", "job", "0123abcd")
	if err := os.MkdirAll(filepath.Join(real, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "config", "job.yml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(l.JobDir("job")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, l.JobDir("job")); err != nil {
		t.Fatal(err)
	}
	p := s.process("linked", "inspect", testproc.EnvList+"="+l.JobDir("job")+"/config")
	_, pr := s.start(p)
	see := s.see(pr)
	if got := see["list "+l.JobDir("job")+"/config"]; got != "job.yml" {
		t.Errorf("the job directory lists %q, want job.yml", got)
	}
	s.exitOf(pr)
}

// TestSandboxPlantedVolumeFIFORefused: the job's user replaces a volume
// (a directory it owns) with a FIFO. Neither the host's hand-over nor, for
// a mount_only volume, the helper's mount accepts it: a volume is a
// directory or a regular file, and the start says so.
func TestSandboxPlantedVolumeFIFORefused(t *testing.T) {
	s := newSandboxed(t)
	l := s.layout
	vol := filepath.Join(l.DataDir("job"), "foo")
	testproc.PlantFIFO(t, vol)
	p := s.process("vol", "inspect")
	p.AdditionalVolumes = []job.Volume{{Path: vol, Writable: true}}
	self, _ := os.Executable()
	r := NewRunner(p, Options{Layout: l, Init: self, InitEnv: []string{"GORACE=" + testproc.NoRaceExitDelay}, User: s.user})
	if pr, err := r.Start(context.Background()); err == nil {
		pr.ForceKill()
		for range pr.Events() {
		}
		t.Error("started with a FIFO as its volume")
	} else if !strings.Contains(err.Error(), "failed to create volume "+vol+": not a directory or a regular file") {
		t.Errorf("start failed with %q", err)
	}
	p.AdditionalVolumes = []job.Volume{{Path: vol, Writable: true, MountOnly: true}}
	_, pr := s.start(p)
	if ev := next(t, pr); ev.Running {
		t.Error("started with a FIFO mounted as its volume")
	} else if !strings.Contains(ev.Exit.Err, "refusing to mount "+vol+": not a directory or a regular file") {
		t.Errorf("start failed with %q", ev.Exit.Err)
	}
}
