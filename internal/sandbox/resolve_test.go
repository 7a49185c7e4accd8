package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenSourceFollowsOnlyRootsLinks walks paths holding symlinks owned by
// root (followed) and by another user (refused wherever they stand), a
// loop, a physical "..", and a missing name.
func TestOpenSourceFollowsOnlyRootsLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating symlinks of another owner needs root")
	}
	const other = 65534
	dir := t.TempDir()
	for _, d := range []string{"a/b/c", "a/x", "x"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := []struct {
		name, target string
		uid          int
	}{
		{"rel", "a/b", 0},
		{"abs", filepath.Join(dir, "a/b"), 0},
		{"a/b/back", "../..", 0},
		{"chain", "rel", 0},
		{"user", "a", other},
		{"a/user", "b", other},
		{"a/b/user", "c", other},
		{"viauser", "a/user", 0},
		{"loop1", "loop2", 0},
		{"loop2", "loop1", 0},
	}
	for _, l := range links {
		p := filepath.Join(dir, l.name)
		if err := os.Symlink(l.target, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, l.uid, l.uid); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(link string) string {
		return filepath.Join(dir, link) + " is a symlink owned by uid 65534: not followed"
	}
	for _, tt := range []struct {
		path string
		want string // the directory reached, below dir
		err  string // or the error's text
	}{
		{path: "a/b/c", want: "a/b/c"},
		{path: "rel/c", want: "a/b/c"},
		{path: "abs/c", want: "a/b/c"},
		{path: "abs", want: "a/b"},
		{path: "chain/c/", want: "a/b/c"},
		{path: "rel/../x", want: "a/x"}, // ".." of where the link led, not of the link
		{path: "a/b/back/x", want: "x"},
		{path: "a/b/c/../../..", want: "."},
		{path: "user/b", err: refused("user")},
		{path: "a/user/c", err: refused("a/user")},
		{path: "a/b/user", err: refused("a/b/user")},
		{path: "viauser/c", err: refused("a/user")},
		{path: "rel/../user", err: refused("a/user")},
		{path: "loop1", err: "too many levels of symbolic links"},
		{path: "a/nope/c", err: filepath.Join(dir, "a/nope") + ": no such file or directory"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			fd, err := openSource(dir + "/" + tt.path) // not Join, which would clean ".." away
			if tt.err != "" {
				if err == nil {
					unix.Close(fd)
					t.Fatalf("opened, want an error %q", tt.err)
				}
				if !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %q, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if got, want := inode(t, fd, ""), inode(t, unix.AT_FDCWD, filepath.Join(dir, tt.want)); got != want {
				t.Errorf("reached %v, want %s (%v)", got, tt.want, want)
			}
		})
	}
	if _, err := openSource(filepath.Join(dir, "a/nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing path gives %v, want fs.ErrNotExist", err)
	}
	if _, err := openSource("a/b"); err == nil {
		t.Error("a relative path was opened")
	}
}

// TestFDPathNamesTheDescriptor: /proc/self/fd/N reaches the very file open
// as N, even after its path was replaced by a symlink.
func TestFDPathNamesTheDescriptor(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := openSource(a)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	want := inode(t, fd, "")
	if err := os.Rename(a, filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", a); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	p, err := fdPath(fd, &st)
	if err != nil {
		t.Fatal(err)
	}
	if got := inode(t, unix.AT_FDCWD, p); got != want {
		t.Errorf("%s reaches %v, want %v", p, got, want)
	}
}

type devIno struct{ dev, ino uint64 }

// inode identifies the file at path relative to dirfd ("" for dirfd itself).
func inode(t *testing.T, dirfd int, path string) devIno {
	t.Helper()
	var st unix.Stat_t
	flags := 0
	if path == "" {
		flags = unix.AT_EMPTY_PATH
	}
	if err := unix.Fstatat(dirfd, path, &st, flags); err != nil {
		t.Fatal(err)
	}
	return devIno{st.Dev, st.Ino}
}
