package pidfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReadRemove(t *testing.T) {
	p := filepath.Join(t.TempDir(), "proc.pid")
	if _, err := Read(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read of a missing file: %v", err)
	}
	for _, pid := range []int{42, 7} { // the second replaces the first
		if err := Write(p, pid); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		if got, err := Read(p); err != nil || got != pid || string(b) != itoa(pid)+"\n" {
			t.Fatalf("read %d %v %q, want %d", got, err, b, pid)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	if err := Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := Remove(p); err != nil {
		t.Fatalf("second remove: %v", err)
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.pid")
	for _, s := range []string{"", "abc", "-3", "0"} {
		os.WriteFile(p, []byte(s), 0o644)
		if _, err := Read(p); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestWriteIntoMissingDirFails(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "x.pid"), 1); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestRemoveIfLeavesAnotherPid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.pid")
	if err := Write(path, 42); err != nil {
		t.Fatal(err)
	}
	if err := RemoveIf(path, 41); err != nil {
		t.Fatal(err)
	}
	if pid, err := Read(path); err != nil || pid != 42 {
		t.Fatalf("a pid file naming another pid was touched: %d %v", pid, err)
	}
	if err := RemoveIf(path, 42); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the pid file naming the pid is left: %v", err)
	}
	if err := RemoveIf(path, 42); err != nil {
		t.Fatalf("a missing pid file: %v", err)
	}
}

// TestReadWriter: the pid comes with who can have written the file: its
// owner, and whether its group or others may write it too.
func TestReadWriter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "proc.pid")
	if err := Write(p, 42); err != nil {
		t.Fatal(err)
	}
	pid, w, err := ReadWriter(p)
	if err != nil || pid != 42 || w.UID != uint32(os.Getuid()) || w.Open {
		t.Fatalf("%d %+v %v", pid, w, err)
	}
	os.Chmod(p, 0o664)
	if _, w, err := ReadWriter(p); err != nil || !w.Open {
		t.Fatalf("group-writable: %+v %v", w, err)
	}
	os.WriteFile(p, []byte("x\n"), 0o644)
	if _, _, err := ReadWriter(p); err == nil {
		t.Fatal("not a pid read as one")
	}
}
