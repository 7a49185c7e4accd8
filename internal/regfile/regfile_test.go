package regfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRefusesWhatAJobCanPlant: a FIFO (with a reader waiting and without),
// a socket, a directory and a symlink at the path are each refused at
// once, for appending, for reading and by ReadFile; none of the opens
// blocks (a blocking open of a FIFO would hang the test until its guard).
func TestRefusesWhatAJobCanPlant(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	held := filepath.Join(dir, "held-fifo") // a reader holds it open
	if err := unix.Mkfifo(held, 0o666); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(held, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sub := filepath.Join(dir, "dir")
	os.Mkdir(sub, 0o755)
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("secret\n"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)

	opens := map[string]func(string) error{
		"append":   func(p string) error { f, err := Append(p, 0o600); closeIf(f); return err },
		"read":     func(p string) error { f, err := Open(p, os.O_RDONLY, 0); closeIf(f); return err },
		"readfile": func(p string) error { _, err := ReadFile(p, 1<<10); return err },
	}
	for name, open := range opens {
		for _, p := range []string{fifo, held, sock, sub} {
			err := open(p)
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s of %s: %v, want an error matching ErrNotRegular naming the path", name, p, err)
			}
		}
		if err := open(link); !errors.Is(err, ErrSymlink) || !errors.Is(err, unix.ELOOP) {
			t.Errorf("%s of a symlink: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "secret\n" {
		t.Fatalf("the symlink's target changed: %q", b)
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// TestRegularFiles: a regular file is created with the mode asked for,
// appended to, read back within the limit, and refused past it; the
// descriptor handed back is blocking.
func TestRegularFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	for range 2 {
		f, err := Append(p, 0o640)
		if err != nil {
			t.Fatal(err)
		}
		if fl, _ := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); fl&unix.O_NONBLOCK != 0 {
			t.Errorf("the file is left non-blocking")
		}
		f.WriteString("line\n")
		f.Close()
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}
	if b, err := ReadFile(p, 10); err != nil || string(b) != "line\nline\n" {
		t.Fatalf("read %q %v", b, err)
	}
	if _, err := ReadFile(p, 9); err == nil {
		t.Fatal("a file past the limit was read")
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
}
