package setup

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/sandbox"
	"github.com/vigil-bosh/vigil/job"
)

// Prepare does on the host what bpm does before a start, beyond creating
// the job's directories (which proc does): it gives the job's writable
// directories to the process's user, creates and hands over the additional
// volumes (unless mount_only), makes shared volumes shared mount points
// (once: a path that already is a mount point is left alone) and creates
// the directory the root is assembled on. For a Host spec (isolation:
// host) it makes no root and shares nothing (nothing is mounted), and it
// lets the process through the job's data directory to its tmp directory
// (see searchable).
func Prepare(l boshpath.Layout, p job.Process, s sandbox.Spec) error {
	if !s.Host {
		if err := os.MkdirAll(s.Root, 0o700); err != nil {
			return fmt.Errorf("create root directory: %w", err)
		}
	}
	own := []string{l.LogDir(p.Job), l.TmpDir(p.Job), l.JobRunDir(p.Job)}
	if p.EphemeralDisk {
		own = append(own, l.DataDir(p.Job))
	}
	if p.PersistentDisk {
		own = append(own, l.StoreDir(p.Job))
	}
	for _, d := range own {
		if err := os.Lchown(d, s.OwnerUID, s.OwnerGID); err != nil {
			return fmt.Errorf("failed to create system files: %w", err)
		}
	}
	if s.Host {
		if err := reachable(l, append(own, l.TmpDir(p.Job))); err != nil {
			return err
		}
	}
	for _, v := range p.AdditionalVolumes {
		if v.Shared && !s.Host { // nothing is mounted on the host's side
			if err := share(v.Path); err != nil {
				return err
			}
		}
		if v.MountOnly {
			continue
		}
		if err := handOver(v.Path, s.OwnerUID, s.OwnerGID); err != nil {
			return err
		}
	}
	return nil
}

// reachable lets every user through the directories between the BOSH
// root and each of dirs (the root and dirs themselves excepted), so that
// a process under isolation: host, which finds its directories on the
// host's file system where its environment names them, reaches them: its
// TMPDIR lies below the job's data directory, root's and 0700 unless the
// process owns it (ephemeral_disk), and in a root vigil laid out itself
// (a container's, a test's) data/ and sys/ are 0700 too. It adds search
// permission alone (x for group and others): nothing becomes listable or
// readable, and the process's own directories stay 0700.
func reachable(l boshpath.Layout, dirs []string) error {
	done := map[string]bool{}
	for _, d := range dirs {
		for up := filepath.Dir(d); up != l.Root() && l.Contains(up); up = filepath.Dir(up) {
			if done[up] {
				continue
			}
			done[up] = true
			if err := searchable(up); err != nil {
				return err
			}
		}
	}
	return nil
}

// searchable adds x for the group and others to the directory dir,
// through a descriptor that refuses a planted link.
func searchable(dir string) error {
	fd, err := sandbox.OpenSource(dir)
	if err != nil {
		return fmt.Errorf("failed to create system files: %w", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("failed to create system files: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("failed to create system files: %s is not a directory", dir)
	}
	if st.Mode&0o011 == 0o011 {
		return nil
	}
	p, err := sandbox.FDPath(fd, &st)
	if err == nil {
		err = unix.Chmod(p, st.Mode&0o7777|0o011) // an O_PATH descriptor takes no fchmod
	}
	if err != nil {
		return fmt.Errorf("failed to create system files: %s: %w", dir, err)
	}
	return nil
}

// handOver creates the volume at path (as bpm does: mode 0700) and gives
// it to uid:gid, through descriptors: a symlink the job planted in the
// path (see openSource) is refused, never followed, so no host file is
// created, chmodded or chowned through it.
func handOver(path string, uid, gid int) error {
	fd, err := sandbox.OpenCreating(path)
	if err != nil {
		return fmt.Errorf("failed to create volume %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("failed to create volume %s: %w", path, err)
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR && t != unix.S_IFREG {
		return fmt.Errorf("failed to create volume %s: not a directory or a regular file", path)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		p, err := sandbox.FDPath(fd, &st)
		if err == nil {
			err = os.Chmod(p, 0o700) // an O_PATH descriptor takes no fchmod
		}
		if err != nil {
			return fmt.Errorf("failed to chmod volume %s: %w", path, err)
		}
	}
	if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("failed to chown volume %s: %w", path, err)
	}
	return nil
}

// share makes path a shared mount point on the host, binding it onto
// itself first when it is not a mount point. Doing nothing when it already
// is one keeps restarts from stacking mounts.
func share(path string) error {
	fd, err := sandbox.OpenSource(path) // never through a planted symlink
	if err != nil {
		return fmt.Errorf("shared volume %s: %w", path, err)
	}
	unix.Close(fd)
	mounted, err := isMountPoint(path)
	if err != nil {
		return err
	}
	if !mounted {
		if err := unix.Mount(path, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("shared volume %s: bind: %w", path, err)
		}
	}
	if err := unix.Mount("", path, "", unix.MS_SHARED, ""); err != nil {
		return fmt.Errorf("shared volume %s: make shared: %w", path, err)
	}
	return nil
}

// isMountPoint reports whether path is the mount point of an entry in this
// process's mountinfo.
func isMountPoint(path string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == path {
			return true, nil
		}
	}
	return false, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline
// and backslash.
func unescapeMount(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}
