package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinks bounds the symlinks one resolution follows, as the kernel does.
const maxLinks = 40

// openSource opens the absolute path as an O_PATH descriptor, walking it
// one component at a time from "/" without letting the kernel follow any
// symlink. A symlink is followed only when root owns it: the job's user
// cannot create such links in the directories it can write, while BOSH's
// own (packages, jobs, merged /usr) keep working. Each step holds the
// descriptor of the directory reached, so swapping a path component while
// the walk runs achieves nothing. ".." is taken physically, from the
// directory reached. The caller closes the descriptor.
func openSource(path string) (int, error) { return walk(path, false) }

// openCreating is openSource that creates each missing directory on the
// way (mode 0700, owned by the caller) in the directory reached, so that
// nothing is created through a link a job planted.
func openCreating(path string) (int, error) { return walk(path, true) }

func walk(path string, create bool) (int, error) {
	if !filepath.IsAbs(path) {
		return -1, fmt.Errorf("%s is not an absolute path", path)
	}
	const flags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Open("/", flags|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	at := "/" // the path reached, for errors
	todo := strings.Split(path, "/")
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		if name == "" || name == "." {
			continue
		}
		next, err := unix.Openat(fd, name, flags, 0)
		if err == unix.ENOENT && create && name != ".." {
			if err = unix.Mkdirat(fd, name, 0o700); err == nil || err == unix.EEXIST {
				next, err = unix.Openat(fd, name, flags, 0)
			}
		}
		if err != nil {
			unix.Close(fd)
			return -1, &os.PathError{Op: "open", Path: filepath.Join(at, name), Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			unix.Close(fd)
			return -1, &os.PathError{Op: "stat", Path: filepath.Join(at, name), Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			unix.Close(fd)
			fd = next
			if name == ".." {
				at = filepath.Dir(at)
			} else {
				at = filepath.Join(at, name)
			}
			continue
		}
		target, err := followable(next, &st, filepath.Join(at, name), &links)
		unix.Close(next)
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
		todo = append(strings.Split(target, "/"), todo...)
		if filepath.IsAbs(target) {
			unix.Close(fd)
			if fd, err = unix.Open("/", flags|unix.O_DIRECTORY, 0); err != nil {
				return -1, &os.PathError{Op: "open", Path: "/", Err: err}
			}
			at = "/"
		}
	}
	return fd, nil
}

// followable returns the target of the symlink open as fd (an O_PATH
// descriptor, whose stat is st) at path, if it may be followed: root owns
// it and fewer than maxLinks links have been followed so far.
func followable(fd int, st *unix.Stat_t, path string, links *int) (string, error) {
	if st.Uid != 0 {
		return "", fmt.Errorf("%s is a symlink owned by uid %d: not followed", path, st.Uid)
	}
	if *links++; *links > maxLinks {
		return "", &os.PathError{Op: "open", Path: path, Err: unix.ELOOP}
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: path, Err: err}
	}
	if n == len(buf) {
		return "", &os.PathError{Op: "readlink", Path: path, Err: unix.ENAMETOOLONG}
	}
	return string(buf[:n]), nil
}

// fdPath names the file open as fd, whose stat is byFD, for a path-taking
// call such as mount(2) (the helper sees the host's /proc, where /proc/self
// is itself). It checks that the name reaches that very file.
func fdPath(fd int, byFD *unix.Stat_t) (string, error) {
	p := fmt.Sprintf("/proc/self/fd/%d", fd)
	var byPath unix.Stat_t
	if err := unix.Stat(p, &byPath); err != nil {
		return "", fmt.Errorf("reach descriptor through /proc: %w", err)
	}
	if byFD.Dev != byPath.Dev || byFD.Ino != byPath.Ino {
		return "", fmt.Errorf("%s does not name descriptor %d (is /proc this process's?)", p, fd)
	}
	return p, nil
}
