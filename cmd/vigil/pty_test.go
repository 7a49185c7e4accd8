package main

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal: a command gets the slave as a terminal, the
// test reads what it wrote from the master.
type pty struct{ master, slave *os.File }

func openPTY(t *testing.T) *pty {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	master := os.NewFile(uintptr(fd), "ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	return &pty{master: master, slave: slave}
}

// read returns what was written to the terminal, once every writer has
// closed the slave (the master then reads EIO).
func (p *pty) read(t *testing.T) string {
	t.Helper()
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := p.master.Read(buf)
		out = append(out, buf[:n]...)
		if errors.Is(err, unix.EIO) || err != nil {
			return string(out)
		}
	}
}
