// Package vmrig boots a Debian guest under qemu with systemd as PID 1 and
// the unified cgroup hierarchy, hands it fresh binaries through a shared
// directory, runs one script there and returns when the guest has powered
// off. The guest's root file system is built once from Debian's packages
// (mmdebstrap) and cached, keyed by what it contains; every boot starts
// from that image unchanged (qemu's snapshot mode).
package vmrig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Recipe says what the guest's root file system holds. Its digest names
// the cached image, so any change builds a new one.
type Recipe struct {
	Suite    string   // Debian suite, e.g. bookworm
	Mirror   string   // "" means mmdebstrap's default (Debian's own)
	Packages []string // installed on top of the minbase variant
	// Files are written into the root after the packages: path → content.
	// A path under etc/systemd/system/*.wants/ holding "->TARGET" becomes
	// a symlink to TARGET.
	Files map[string]string
	// Users are "name:uid" entries added to passwd and group (uid = gid).
	Users []string
}

// Image is a cached guest: its root file system and the kernel and initrd
// installed in it, which boot it.
type Image struct {
	Disk, Kernel, Initrd string
	Key                  string // the recipe's digest
	Built                bool   // true when this call built it (a cold cache)
}

// imageFormat changes when the way an image is made changes.
const imageFormat = "vigil-vmrig-1"

// Key is the digest of the recipe, naming its image in the cache.
func (r Recipe) Key() string {
	b, _ := json.Marshal(struct {
		Format string
		R      Recipe
	}{imageFormat, r})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Build returns the image of r in cacheDir, building it first when the
// cache has none (mmdebstrap, then mke2fs -d: nothing is mounted on the
// host). Builders of the same cache wait for each other on a lock file;
// an image appears in the cache only once complete. Progress goes to log.
func Build(ctx context.Context, cacheDir string, r Recipe, log io.Writer) (Image, error) {
	key := r.Key()
	dir := filepath.Join(cacheDir, key)
	img := Image{Disk: filepath.Join(dir, "root.ext4"), Kernel: filepath.Join(dir, "vmlinuz"),
		Initrd: filepath.Join(dir, "initrd.img"), Key: key}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return img, fmt.Errorf("image cache: %w", err)
	}
	unlock, err := lock(filepath.Join(cacheDir, "lock"))
	if err != nil {
		return img, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return img, nil
	}
	for _, tool := range []string{"mmdebstrap", "mke2fs"} {
		if _, err := exec.LookPath(tool); err != nil {
			return img, fmt.Errorf("build the guest image: %s is missing (apt-get install mmdebstrap e2fsprogs): %w", tool, err)
		}
	}
	fmt.Fprintf(log, "vmrig: building the guest image %s in %s (cold cache: Debian %s, %d packages)\n",
		key, dir, r.Suite, len(r.Packages))
	tmp := dir + ".building"
	if err := os.RemoveAll(tmp); err != nil {
		return img, fmt.Errorf("image cache: %w", err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return img, fmt.Errorf("image cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := build(ctx, tmp, r, log); err != nil {
		return img, err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return img, fmt.Errorf("image cache: %w", err)
	}
	img.Built = true
	return img, nil
}

// build makes the image's files in dir.
func build(ctx context.Context, dir string, r Recipe, log io.Writer) error {
	root := filepath.Join(dir, "root")
	args := []string{"--mode=root", "--variant=minbase", "--include=" + strings.Join(r.Packages, ","), r.Suite, root}
	if r.Mirror != "" {
		args = append(args, r.Mirror)
	}
	if err := run(ctx, log, "mmdebstrap", args...); err != nil {
		return err
	}
	if err := customize(root, r); err != nil {
		return err
	}
	for name, glob := range map[string]string{"vmlinuz": "boot/vmlinuz-*", "initrd.img": "boot/initrd.img-*"} {
		found, _ := filepath.Glob(filepath.Join(root, glob))
		if len(found) != 1 {
			return fmt.Errorf("build the guest image: want one %s in the root, found %v", glob, found)
		}
		if err := copyFile(found[0], filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	// ext4 from the directory, sparse; the guest's own writes never reach
	// it (each boot runs on a snapshot).
	if err := run(ctx, log, "mke2fs", "-q", "-t", "ext4", "-L", "vigilrig", "-d", root,
		filepath.Join(dir, "root.ext4"), "4G"); err != nil {
		return err
	}
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("build the guest image: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "ready"), []byte(imageFormat+"\n"), 0o644)
}

// customize writes the recipe's files and users into the root.
func customize(root string, r Recipe) error {
	paths := make([]string, 0, len(r.Files))
	for p := range r.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("guest file %s: %w", p, err)
		}
		text := r.Files[p]
		if target, ok := strings.CutPrefix(text, "->"); ok {
			_ = os.Remove(full)
			if err := os.Symlink(target, full); err != nil {
				return fmt.Errorf("guest file %s: %w", p, err)
			}
			continue
		}
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(text, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(text), mode); err != nil {
			return fmt.Errorf("guest file %s: %w", p, err)
		}
	}
	for _, u := range r.Users {
		name, id, ok := strings.Cut(u, ":")
		if !ok {
			return fmt.Errorf("guest user %q: want name:uid", u)
		}
		for file, line := range map[string]string{
			"etc/passwd": fmt.Sprintf("%s:x:%s:%s::/home/%s:/bin/sh\n", name, id, id, name),
			"etc/group":  fmt.Sprintf("%s:x:%s:\n", name, id),
			"etc/shadow": name + ":!:19000::::::\n",
		} {
			if err := appendFile(filepath.Join(root, file), line); err != nil {
				return err
			}
		}
	}
	return nil
}

func appendFile(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("guest user: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("guest user: %w", err)
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("build the guest image: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		return fmt.Errorf("build the guest image: %w", err)
	}
	return nil
}

// run runs a build tool with its output on log.
func run(ctx context.Context, log io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build the guest image: %s: %w", name, err)
	}
	return nil
}

// lock takes an exclusive lock on path, waiting for another builder; the
// returned function releases it.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("image cache lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("image cache lock: %w", err)
	}
	return func() { f.Close() }, nil
}
