package launch

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-bosh/vigil/internal/testproc"
	"github.com/vigil-bosh/vigil/job"
)

// shell describes "/bin/sh -c script" as a process of the job: a glibc
// program, run under the seccomp filter.
func (s *sandboxed) shell(name, script string) job.Process {
	return job.Process{
		Job: "job", Name: name, Executable: "/bin/sh", ResolvedExecutable: "/bin/sh",
		Args: []string{"-c", script}, Workdir: s.layout.JobDir("job"), ShutdownSignal: syscall.SIGTERM,
	}
}

func TestSandboxOOMKill(t *testing.T) {
	s := newSandboxed(t)
	p := s.process("oom", "alloc", testproc.EnvAlloc+"=1024")
	mem := uint64(64 << 20)
	p.Limits.Memory = &mem
	_, pr := s.start(p)
	s.rep.Expect(t, "allocating")
	e := s.exitOf(pr)
	if !e.OOM || e.Signal != syscall.SIGKILL || e.String() != "killed by the OOM killer" {
		t.Fatalf("exit %+v (%s), want an OOM kill", e, e)
	}
}

func TestSandboxProcessLimit(t *testing.T) {
	s := newSandboxed(t)
	count := filepath.Join(s.layout.LogDir("job"), "count")
	p := s.shell("forks", `i=0; while [ $i -lt 100 ]; do sleep 1000 & i=$((i+1)); echo $i > `+count+`; done`)
	limit := int64(10)
	p.Limits.Processes = &limit
	_, pr := s.start(p)
	e := s.exitOf(pr)
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatalf("exit %v; %v", e, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if n < 1 || int64(n) >= limit || e.Success() {
		t.Fatalf("started %d children under limits.processes %d, exit %v", n, limit, e)
	}
}

func TestSandboxGlibcPrograms(t *testing.T) {
	s := newSandboxed(t)
	out := filepath.Join(s.layout.LogDir("job"), "ls")
	_, pr := s.start(s.shell("ls", `/bin/ls / > `+out+` && /usr/bin/env true && date > /dev/null`))
	if e := s.exitOf(pr); !e.Success() {
		b, _ := os.ReadFile(s.layout.StderrLog("job", "ls"))
		t.Fatalf("exit %v: %s", e, b)
	}
	b, _ := os.ReadFile(out)
	names := strings.Fields(string(b))
	for _, want := range []string{"etc", "usr", "proc", "tmp", "dev"} {
		if !slices.Contains(names, want) {
			t.Errorf("/ lacks %s: %v", want, names)
		}
	}
	for _, hidden := range []string{"root", "home", "boot"} {
		if slices.Contains(names, hidden) {
			t.Errorf("/ shows %s: %v", hidden, names)
		}
	}
}

// TestSandboxMountsDoNotPileUp restarts a process with volumes, a shared one
// among them, and checks that the host's mount table stays as it was after
// the first start (which shares the shared volume once).
func TestSandboxMountsDoNotPileUp(t *testing.T) {
	s := newSandboxed(t)
	l := s.layout
	shared := filepath.Join(l.Root(), "data", "shared")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(shared, syscall.MNT_DETACH) })
	if err := os.MkdirAll(l.StoreRoot(), 0o755); err != nil {
		t.Fatal(err)
	}
	p := s.shell("vols", "test -w "+shared+" && test -w "+l.StoreDir("job")+" && test ! -w "+filepath.Join(l.Root(), "data", "ro"))
	p.PersistentDisk = true
	p.AdditionalVolumes = []job.Volume{{Path: shared, Writable: true, Shared: true}, {Path: filepath.Join(l.Root(), "data", "ro")}}
	run := func() {
		_, pr := s.start(p)
		if e := s.exitOf(pr); !e.Success() {
			b, _ := os.ReadFile(l.StderrLog("job", "vols"))
			t.Fatalf("exit %v: %s", e, b)
		}
		for range pr.Events() {
		}
	}
	run()
	before := mountTable(t)
	for range 3 {
		run()
	}
	if after := mountTable(t); !slices.Equal(before, after) {
		t.Fatalf("mount table changed across restarts:\nbefore %v\nafter  %v", before, after)
	}
	if n := strings.Count(strings.Join(before, "\n"), " "+shared+" "); n != 1 {
		t.Fatalf("shared volume mounted %d times on the host", n)
	}
}

func mountTable(t *testing.T) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		out = append(out, f[0]+" "+f[4]+" ")
	}
	slices.Sort(out)
	return out
}
