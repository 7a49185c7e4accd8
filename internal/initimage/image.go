// Package initimage carries vigil's per-process init as a program of its
// own (vigil-init: package procinit and what it needs, about 2 MB, against
// vigil's 18) and runs it from memory. Every supervised process has an
// init, so the init's size and start-up are paid once per process: the
// whole vigil binary would initialise HTTP, TLS, templates and the rest in
// each of them.
//
// The image is built by "go generate" (gen/) and committed, one file per
// architecture; its test rebuilds it and fails when the committed build is
// not what the source gives. On an architecture without one, or where
// memory files are refused, vigil runs itself as the init ("vigil init"),
// which behaves the same and costs more.
package initimage

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

//go:generate go run ./gen

// Name is the init's program name, its argv[0]: what ps shows.
const Name = "vigil-init"

// ErrNone is Open's error on an architecture vigil carries no image for.
var ErrNone = errors.New("no vigil-init image for this architecture")

// Image is the init's executable in a sealed memory file: nothing can
// write it, and it is gone when the last process holding or executing it
// ends (the inits started from it keep it).
type Image struct {
	f *os.File
}

// Open writes the embedded init into a new sealed memory file. The caller
// closes the Image once it starts no more inits; inits already started
// keep running from it.
func Open() (*Image, error) {
	if len(embedded) == 0 {
		return nil, ErrNone
	}
	fd, err := memfd()
	if err != nil {
		return nil, fmt.Errorf("init image: memfd_create: %w", err)
	}
	if fd, err = above(fd, MaxChildFiles); err != nil {
		return nil, fmt.Errorf("init image: %w", err)
	}
	f := os.NewFile(uintptr(fd), Name)
	if err := fill(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("init image: %w", err)
	}
	forget(embedded)
	return &Image{f: f}, nil
}

// forget drops the pages of s, read-only data of vigil's binary, from this
// process's memory (the pages are the file's: touched again, they are read
// again). Copying the image into its memory file read them; a daemon that
// kept them would carry 2 MB it never uses again.
func forget(s string) {
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	first, end := (start+page-1)&^(page-1), (start+uintptr(len(s)))&^(page-1)
	if end <= first {
		return
	}
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	_ = unix.Madvise(b[first-start:end-start], unix.MADV_DONTNEED)
}

// MaxChildFiles is the number of descriptors (stdin, stdout, stderr and
// the extra ones) up to which a child started with Path can rely on it.
const MaxChildFiles = 100

// above moves fd out of reach of what a fork does to the child's
// descriptors before it execs (a child of at most files descriptors), and
// closes the original. Path names the image as /proc/self/fd/N, resolved
// by the child's execve after Go's fork has placed the child's files at
// 0..n-1 and moved those in the way to n and above (at most 2n+1): a
// memory file at one of those numbers would be replaced first, and the
// child would exec its console or its control socket (EACCES; seen once
// in a pod, where the image happened to be fd 5 and the console's stderr
// became the child's fd 5).
func above(fd, files int) (int, error) {
	floor := 2*files + 2
	hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, floor)
	unix.Close(fd)
	if err != nil {
		return -1, fmt.Errorf("move the memory file to descriptor %d or above: %w", floor, err)
	}
	return hi, nil
}

// memfd creates the memory file, executable: asked for with MFD_EXEC,
// which a kernel whose vm.memfd_noexec is 1 needs (it seals memory files
// against execution by default) and one older than Linux 6.3 refuses as
// unknown (EINVAL: its memory files are executable anyway). Where
// vm.memfd_noexec is 2 the kernel refuses executable memory files, and
// Open fails.
func memfd() (int, error) {
	const flags = unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate(Name, flags|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate(Name, flags)
	}
	return fd, err
}

// fill writes the image, makes it executable and seals it against any
// change.
func fill(f *os.File) error {
	if _, err := f.WriteString(embedded); err != nil {
		return err
	}
	if err := f.Chmod(0o555); err != nil {
		return err
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	return nil
}

// Path names the image for execve in this process and in its children
// until they exec (the descriptor is inherited by a fork and closed by its
// exec, after the kernel has opened the file), for a child given at most
// MaxChildFiles descriptors.
func (im *Image) Path() string { return "/proc/self/fd/" + strconv.Itoa(int(im.f.Fd())) }

// Close releases the memory file. Inits started from it keep it alive.
func (im *Image) Close() error { return im.f.Close() }
