package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/regfile"
)

// buildRoot assembles the root on s.Root in this (new) mount namespace and
// pivots into it. Nothing propagates back to the host: the whole tree is
// made a slave first, and everything dies with the namespace.
func buildRoot(s *Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave mount: %w", err)
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	if s.RootSuid {
		flags = unix.MS_NODEV
	}
	if err := unix.Mount("tmpfs", s.Root, "tmpfs", flags, "mode=755"); err != nil {
		return fmt.Errorf("mount root tmpfs: %w", err)
	}
	for _, m := range s.Mounts {
		if err := mountOne(s.Root, m); err != nil {
			return err
		}
	}
	for _, p := range s.Masked {
		if err := mask(filepath.Join(s.Root, p)); err != nil {
			return err
		}
	}
	for _, p := range s.ReadOnly {
		dest := filepath.Join(s.Root, p)
		if _, err := os.Lstat(dest); err != nil {
			continue
		}
		if err := unix.Mount(dest, dest, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
		if err := setAttr(dest, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC, 0); err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
	}
	if err := os.Chdir(s.Root); err != nil {
		return fmt.Errorf("enter root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("chdir /: %w", err)
	}
	return nil
}

func mountOne(root string, m Mount) error {
	dest := filepath.Join(root, m.Dest)
	switch m.Kind {
	case KindSymlink:
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return fmt.Errorf("mount %s: %w", m.Dest, err)
		}
		if err := os.Symlink(m.Source, dest); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("mount %s: %w", m.Dest, err)
		}
		return nil
	case KindBind:
		if err := bind(m.Source, dest); err != nil {
			return fmt.Errorf("mount %s: %w", m.Dest, err)
		}
		var clr uint64
		if !m.NoSuid { // a privileged process's: no nosuid, even where the source's mount has it
			clr = unix.MOUNT_ATTR_NOSUID
		}
		if err := setAttr(dest, attrs(m), clr); err != nil {
			return fmt.Errorf("mount %s: %w", m.Dest, err)
		}
		if m.Shared {
			if err := unix.Mount("", dest, "", unix.MS_SHARED, ""); err != nil {
				return fmt.Errorf("mount %s shared: %w", m.Dest, err)
			}
		}
		return nil
	}
	if err := mountPoint(dest, true); err != nil {
		return fmt.Errorf("mount %s: %w", m.Dest, err)
	}
	var flags uintptr
	for _, f := range []struct {
		on   bool
		flag uintptr
	}{{m.ReadOnly, unix.MS_RDONLY}, {m.NoExec, unix.MS_NOEXEC}, {m.NoSuid, unix.MS_NOSUID}, {m.NoDev, unix.MS_NODEV}} {
		if f.on {
			flags |= f.flag
		}
	}
	if err := unix.Mount(m.Kind, dest, m.Kind, flags, m.Data); err != nil {
		return fmt.Errorf("mount %s %s: %w", m.Kind, m.Dest, err)
	}
	return nil
}

// bind binds source onto dest (created as a directory or a file to match).
// The source is opened by openSource, so a symlink that the job's user
// planted on its path is refused, and the descriptor is what gets mounted:
// nothing can swap the path between the check and the mount.
func bind(source, dest string) error {
	fd, err := openSource(source)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", source, err)
	}
	if err := bindable(source, st.Mode); err != nil {
		return err
	}
	if err := mountPoint(dest, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	src, err := fdPath(fd, &st)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	return unix.Mount(src, dest, "", unix.MS_BIND|unix.MS_REC, "")
}

// bindable refuses a bind source of a type no volume has: a FIFO, a
// socket, or a device outside /dev (only the system's /dev entries are
// devices on purpose; a job with CAP_MKNOD could plant one in its volume).
func bindable(source string, mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR, unix.S_IFREG:
		return nil
	case unix.S_IFCHR, unix.S_IFBLK:
		if strings.HasPrefix(source, "/dev/") {
			return nil
		}
	}
	return fmt.Errorf("refusing to mount %s: not a directory or a regular file", source)
}

// mountPoint creates dest as a directory or an empty file. A mount point
// may lie below a directory the job writes (a volume inside its data
// directory), so the file is opened without following a link or blocking
// on a FIFO planted there.
func mountPoint(dest string, dir bool) error {
	if dir {
		return os.MkdirAll(dest, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	f, err := regfile.Open(dest, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func attrs(m Mount) uint64 {
	var a uint64
	for _, f := range []struct {
		on   bool
		attr uint64
	}{{m.ReadOnly, unix.MOUNT_ATTR_RDONLY}, {m.NoExec, unix.MOUNT_ATTR_NOEXEC}, {m.NoSuid, unix.MOUNT_ATTR_NOSUID}, {m.NoDev, unix.MOUNT_ATTR_NODEV}} {
		if f.on {
			a |= f.attr
		}
	}
	return a
}

// setAttr sets the attributes a and clears those in clr on the mount at
// dest and every mount below it. Kernels without mount_setattr (before
// 5.12) get a remount of the top mount only, to a alone (which clears the
// rest).
func setAttr(dest string, a, clr uint64) error {
	if a == 0 && clr == 0 {
		return nil
	}
	err := unix.MountSetattr(-1, dest, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: a, Attr_clr: clr})
	if !errors.Is(err, unix.ENOSYS) {
		return err
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT)
	for _, f := range []struct {
		attr uint64
		flag uintptr
	}{{unix.MOUNT_ATTR_RDONLY, unix.MS_RDONLY}, {unix.MOUNT_ATTR_NOEXEC, unix.MS_NOEXEC},
		{unix.MOUNT_ATTR_NOSUID, unix.MS_NOSUID}, {unix.MOUNT_ATTR_NODEV, unix.MS_NODEV}} {
		if a&f.attr != 0 {
			flags |= f.flag
		}
	}
	return unix.Mount("", dest, "", flags, "")
}

// mask hides path: a directory under an empty read-only tmpfs, a file under
// /dev/null. A path that does not exist needs no hiding.
func mask(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	if fi.IsDir() {
		err = unix.Mount("tmpfs", path, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0")
	} else {
		err = unix.Mount("/dev/null", path, "", unix.MS_BIND, "")
	}
	if err != nil {
		return fmt.Errorf("mask %s: %w", path, err)
	}
	return nil
}
