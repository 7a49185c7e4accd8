package initimage

import (
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func open(t *testing.T) *Image {
	im, err := Open()
	if errors.Is(err, ErrNone) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	return im
}

// TestCommittedImageIsTheSourcesBuild rebuilds vigil-init as go generate
// does and compares it with the committed files, byte for byte: a change to
// the init's code without go generate fails here.
func TestCommittedImageIsTheSourcesBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds vigil-init twice")
	}
	committed, err := os.ReadFile("vigil-init.linux-amd64")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := buildinfo.Read(bytes.NewReader(committed)); err != nil {
		t.Fatal(err)
	} else if v, _, _ := strings.Cut(info.GoVersion, "-X:"); v != runtime.Version() { // gen builds with an experiment: "go1.N.M-X:name"
		t.Fatalf("the committed vigil-init was built with %s, the tests run with %s: go generate ./internal/initimage with go.mod's toolchain", info.GoVersion, runtime.Version())
	}
	dir := t.TempDir()
	gen := exec.Command("go", "run", "./gen", "-o", dir)
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("go run ./gen: %v\n%s", err, out)
	}
	for _, name := range []string{"vigil-init.linux-amd64", "vigil-init.linux-arm64"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what its source builds to: run go generate ./internal/initimage", name)
		}
	}
}

// TestImageIsSealed: the memory file takes no writes, no truncation and no
// new seals, through any descriptor.
func TestImageIsSealed(t *testing.T) {
	im := open(t)
	f, err := os.OpenFile(im.Path(), os.O_RDWR, 0)
	if err == nil {
		_, err = f.Write([]byte("x"))
		if terr := f.Truncate(0); terr == nil {
			t.Error("the image could be truncated")
		}
		f.Close()
	}
	if err == nil {
		t.Fatal("the image could be written")
	}
	b, err := os.ReadFile(im.Path())
	if err != nil || string(b) != embedded {
		t.Fatalf("the image reads back %d bytes (%v), want the %d embedded", len(b), err, len(embedded))
	}
}

// TestImageInitialisesOnlyAnInit: the packages whose initialisation runs
// in every init (GODEBUG=inittrace=1) are the runtime's and the few an init
// uses; none of HTTP, TLS, templates, YAML, JSON or D-Bus.
func TestImageInitialisesOnlyAnInit(t *testing.T) {
	im := open(t)
	cmd := exec.Command(im.Path(), "init") // no launch on fd 3: it fails after its initialisation
	cmd.Args[0] = Name
	cmd.Env = []string{"GODEBUG=inittrace=1"}
	out, _ := cmd.CombinedOutput()
	allowed := map[string]bool{"runtime": true, "math": true, "errors": true, "iter": true, "sync": true,
		"syscall": true, "time": true, "context": true, "io/fs": true, "os": true, "os/signal": true,
		"unicode": true, "reflect": true, "path/filepath": true, "golang.org/x/sys/unix": true}
	traced := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line) // init PKG @T ms, C ms clock, B bytes, A allocs
		if len(f) != 11 || f[0] != "init" {
			continue
		}
		traced++
		if !allowed[f[1]] && !strings.HasPrefix(f[1], "internal/") {
			t.Errorf("vigil-init initialises %s (%s bytes)", f[1], f[7])
		}
	}
	if traced == 0 {
		t.Fatalf("no initialisation traced:\n%s", out)
	}
}

// TestOpenLeavesNoCopyResident: copying the image into its memory file
// reads the embedded copy, whose pages Open then drops, so that a daemon
// does not carry the image twice.
func TestOpenLeavesNoCopyResident(t *testing.T) {
	if len(embedded) == 0 {
		t.Skip(ErrNone)
	}
	before := fileResident(t)
	open(t)
	if grown := fileResident(t) - before; grown > len(embedded)/2 {
		t.Fatalf("the process's file pages grew by %d KiB opening a %d KiB image", grown>>10, len(embedded)>>10)
	}
}

// fileResident is the process's resident file-backed memory in bytes.
func fileResident(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skip(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Pss_File:"); ok {
			var kib int
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kib); err != nil {
				t.Fatal(err)
			}
			return kib << 10
		}
	}
	t.Skip("no Pss_File in smaps_rollup")
	return 0
}

// TestPathOutlivesTheChildsDescriptors: a child given up to MaxChildFiles
// descriptors still finds the image at Path when it execs, after its fork
// has moved its descriptors into place. A memory file at a low number was
// replaced by one of them (a pod's init, given its console, exec'd the
// console's stderr at fd 5: permission denied).
func TestPathOutlivesTheChildsDescriptors(t *testing.T) {
	im := open(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for n := 3; n <= MaxChildFiles; n++ {
		extra := make([]*os.File, n-3)
		for i := range extra {
			extra[i] = null
		}
		cmd := exec.Command(im.Path(), "init") // exits at once: fd 3 is no launch socket
		cmd.Args[0] = Name
		cmd.ExtraFiles = extra
		if err := cmd.Start(); err != nil {
			t.Fatalf("%d descriptors: %v", n, err)
		}
		cmd.Wait()
	}
}
