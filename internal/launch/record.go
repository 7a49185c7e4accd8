package launch

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/atomicfile"
	"github.com/vigil-bosh/vigil/internal/procstat"
	"github.com/vigil-bosh/vigil/internal/regfile"
)

// initRecord says which process an init is, written by whoever started it
// (a daemon, a detached bpm start) before the init can write its pid file,
// into a directory only root (or, unprivileged, vigil's own user) writes.
// A process found at the pid a pid file names is the init only if it
// matches the record: pid, start time and executable. The start time
// pins the pid: a process placed at a recycled pid later has another.
type initRecord struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"` // /proc/PID/stat's starttime, in clock ticks since boot
	Dev   uint64 `json:"dev"`   // the executable's device and inode
	Ino   uint64 `json:"ino"`
}

// recordInit writes path's record of the init pid, which has just been
// started from program (and has not been given its launch yet, so it has
// written no pid file). The executable recorded is program's file, which
// the start executed, not what /proc/PID/exe says at the moment: that was
// seen to be the starter's own binary still, now and then, in the guest of
// the VM stage, and an init recorded so is never adopted.
func recordInit(path string, pid int, program string) error {
	st, err := procstat.ReadStat(pid)
	if err != nil {
		return fmt.Errorf("record init %d: %w", pid, err)
	}
	dev, ino, err := fileID(program)
	if err != nil {
		return fmt.Errorf("record init %d: %w", pid, err)
	}
	b, _ := json.Marshal(initRecord{PID: pid, Start: st.StartTicks, Dev: dev, Ino: ino})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("record init %d: %w", pid, err)
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("record init %d: %w", pid, err)
	}
	return nil
}

// stagingDir makes dir empty, for a pool's spares' records to wait in,
// and returns it: what a daemon that ended without closing its pool left
// there goes (a root has one daemon). It returns "" when dir is "" or
// cannot be made: the spares are then recorded at their start, as fresh
// inits are.
func stagingDir(dir string) string {
	if dir == "" {
		return ""
	}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	return dir
}

// stage writes s's record into dir ahead of its launch (none without dir,
// or when it cannot be written: recordAs then writes it at the start).
func (s *spare) stage(dir string) {
	if dir == "" {
		return
	}
	path := filepath.Join(dir, strconv.Itoa(s.cmd.Process.Pid)+".json")
	if recordInit(path, s.cmd.Process.Pid, s.cmd.Path) == nil {
		s.record = path
	}
}

// recordAs puts s's record at path: the one written ahead, renamed into
// place, or else a new one.
func (s *spare) recordAs(path string) error {
	if s.record != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err == nil && os.Rename(s.record, path) == nil {
			s.record = ""
			return nil
		}
	}
	return recordInit(path, s.cmd.Process.Pid, s.cmd.Path)
}

// readRecord reads the record at path, which must be a regular file of
// root or of vigil's own user that no one else can write.
func readRecord(path string) (initRecord, error) {
	f, err := regfile.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return initRecord{}, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return initRecord{}, fmt.Errorf("stat %s: %w", path, err)
	}
	if !trustedUID(st.Uid) || st.Mode&0o022 != 0 {
		return initRecord{}, fmt.Errorf("%s: owned by uid %d, mode %#o: not a record of ours", path, st.Uid, st.Mode&0o777)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord))
	if err != nil {
		return initRecord{}, fmt.Errorf("read %s: %w", path, err)
	}
	var rec initRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return initRecord{}, fmt.Errorf("read %s: %w", path, err)
	}
	return rec, nil
}

// trustedUID: root, or the user vigil runs as (unprivileged, everything
// is that user's anyway).
func trustedUID(uid uint32) bool { return uid == 0 || int(uid) == os.Geteuid() }

// verifyInit checks that pid, held by a pidfd, is the init recorded at
// recPath: owned by root (or vigil's own user), started when the record
// says, and executing the image the record names. The caller checks
// afterwards that the pidfd's process is still alive, which proves that
// what was read here was read of it.
func verifyInit(pid int, recPath string) error {
	rec, err := readRecord(recPath)
	if err != nil {
		return err
	}
	if uid, err := ownerOf(pid); err != nil {
		return err
	} else if !trustedUID(uid) {
		return fmt.Errorf("pid %d runs as uid %d", pid, uid)
	}
	st, err := procstat.ReadStat(pid)
	if err != nil {
		return err
	}
	if rec.PID != pid || rec.Start != st.StartTicks {
		return fmt.Errorf("pid %d (started at tick %d) is not the init recorded in %s (pid %d, started at tick %d)",
			pid, st.StartTicks, recPath, rec.PID, rec.Start)
	}
	return isInitImage(pid, rec)
}

// isInitImage checks that pid executes the binary its record names: the
// one test of "this is vigil's init binary". It compares files, not paths,
// so an init started before its binary was replaced (an upgrade) is still
// recognised, and nothing else is.
func isInitImage(pid int, rec initRecord) error {
	dev, ino, err := executableOf(pid)
	if err != nil {
		return err
	}
	if dev != rec.Dev || ino != rec.Ino {
		return fmt.Errorf("pid %d does not execute the init's binary (it executes file %d:%d, the record names %d:%d)", pid, dev, ino, rec.Dev, rec.Ino)
	}
	return nil
}

// executableOf is the device and inode of the file pid executes.
func executableOf(pid int) (dev, ino uint64, err error) {
	if dev, ino, err = fileID("/proc/" + strconv.Itoa(pid) + "/exe"); err != nil {
		return 0, 0, fmt.Errorf("executable of %d: %w", pid, err)
	}
	return dev, ino, nil
}

// fileID is the device and inode of the file at path, following links.
func fileID(path string) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return st.Dev, st.Ino, nil
}

// ownerOf is pid's real and effective uid when they agree; a process whose
// real and effective uids differ is owned by neither.
func ownerOf(pid int) (uint32, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) < 2 {
				break
			}
			real, err1 := strconv.ParseUint(f[0], 10, 32)
			eff, err2 := strconv.ParseUint(f[1], 10, 32)
			if err1 != nil || err2 != nil {
				break
			}
			if real != eff {
				return 0, fmt.Errorf("pid %d has real uid %d and effective uid %d", pid, real, eff)
			}
			return uint32(real), nil
		}
	}
	return 0, fmt.Errorf("pid %d: no Uid line in its status", pid)
}
