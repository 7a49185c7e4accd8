package monit

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// FileInfo is what the last cycle saw of a file, directory, fifo or
// filesystem.
type FileInfo struct {
	Mode      uint32 // permission bits (07777)
	UID, GID  int
	Timestamp time.Time // the later of mtime and ctime, as monit takes it
	Size      int64
	Checksum  string // with a checksum test: the file's, in Hash
	Hash      string // MD5 or SHA1
	FS        *FSInfo
}

// FSInfo is a filesystem's usage (statfs).
type FSInfo struct {
	Flags                              int64
	BlockSize, Blocks, Free, FreeTotal int64 // free: for non superusers; total: all
	Files, FilesFree                   int64
	SpacePercent, InodePercent         float64
	SpaceUsedBlocks, InodesUsed        int64
}

// fileMemo is what change tests compare with, from the cycle before; at
// the first look, from when the engine began (monit takes it when it
// reads the control file).
type fileMemo struct {
	seen      bool
	begun     bool // the path existed when the engine began
	timestamp time.Time
	size      int64
	sum       string // the expected checksum (given, or taken at the first look)
	inode     uint64
	readPos   int64 // how far the content tests have read
	flags     int64
}

// checkPath is monit's check_file, check_directory, check_fifo and
// check_filesystem: the path must exist and be of its type; then the
// tests, in monit's order.
func (e *Engine) checkPath(svc *monitrc.Service, st *svcState) []posted {
	word := strings.ToLower(svc.Type.Word()) // a path type: file, directory, fifo, filesystem
	exist := existAction(svc)
	alert := monitrc.Action{Kind: monitrc.ActAlert}
	var fi os.FileInfo
	var err error
	if svc.Type == monitrc.TypeFilesystem {
		fi, err = os.Stat(svc.Path) // through a symbolic link to the device or mount point
	} else {
		fi, err = os.Stat(svc.Path)
	}
	if err != nil {
		msg := word + " doesn't exist"
		return []posted{{key: "exist", bit: EventNonexist, failed: true, message: msg, action: exist, recover: alert}}
	}
	existed := word + " exist"
	if svc.Type == monitrc.TypeFilesystem {
		existed = "filesystem exists"
	}
	out := []posted{{key: "exist", bit: EventNonexist, message: existed, action: exist, recover: alert}}
	sys := fi.Sys().(*syscall.Stat_t)
	info := &FileInfo{Mode: uint32(fi.Mode().Perm()) | uint32(sys.Mode&0o7000), UID: int(sys.Uid), GID: int(sys.Gid),
		Timestamp: laterOf(time.Unix(sys.Mtim.Unix()), time.Unix(sys.Ctim.Unix())), Size: fi.Size()}
	if ok, what := rightType(svc.Type, fi); svc.Type != monitrc.TypeFilesystem {
		// Of the wrong type, it is restarted, as a missing one (monit's
		// default action for an invalid type).
		restart := monitrc.Action{Kind: monitrc.ActRestart}
		out = append(out, posted{key: "type", bit: EventInvalid, failed: !ok, message: what, action: restart, recover: alert})
		if !ok {
			return out
		}
	}
	if svc.Type == monitrc.TypeFilesystem {
		fs, err := statfs(svc.Path)
		if err != nil {
			return append(out, posted{key: "data", bit: EventData, failed: true, action: alert, recover: alert,
				message: "unable to read filesystem " + svc.Path + " state"})
		}
		info.FS = fs
		out = append(out, posted{key: "data", bit: EventData, action: alert, recover: alert,
			message: "succeeded getting filesystem statistic for " + svc.Path})
	}
	for i, t := range svc.Tests {
		if t.Kind == monitrc.TestChecksum {
			out = append(out, e.checksum(i, t, svc, st, info))
		}
	}
	for _, kind := range []monitrc.TestKind{monitrc.TestPermission, monitrc.TestUID, monitrc.TestGID,
		monitrc.TestFsflag, monitrc.TestSpace, monitrc.TestInode, monitrc.TestSize, monitrc.TestTimestamp} {
		for _, i := range reversed(svc, kind) {
			t := svc.Tests[i]
			if c, ok := pathTest(t, svc, st, info); ok {
				out = append(out, testResult(i, t, c))
			}
			if t.Changed && (kind == monitrc.TestSize || kind == monitrc.TestTimestamp) {
				break // monit's loop ends at a change test: the tests before it are not checked
			}
		}
	}
	out = append(out, e.content(svc, st, info, sys.Ino)...)
	st.memo.seen, st.memo.timestamp, st.memo.size, st.memo.inode = true, info.Timestamp, info.Size, sys.Ino
	if info.FS != nil {
		st.memo.flags = info.FS.Flags
	}
	e.mu.Lock()
	st.file = info
	e.mu.Unlock()
	return out
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// rightType reports whether fi is of the service's type, with monit's
// message.
func rightType(t monitrc.ServiceType, fi os.FileInfo) (bool, string) {
	switch t {
	case monitrc.TypeDirectory:
		if fi.IsDir() {
			return true, "is directory"
		}
		return false, "is not directory"
	case monitrc.TypeFifo:
		if fi.Mode()&os.ModeNamedPipe != 0 {
			return true, "is fifo"
		}
		return false, "is not fifo"
	}
	if fi.Mode().IsRegular() {
		return true, "is a regular file"
	}
	return false, "is not a regular file"
}

// pathTest runs one attribute test on what the cycle saw. ok is false for
// a change test's first look (it only takes the value to compare with).
func pathTest(t monitrc.Test, svc *monitrc.Service, st *svcState, info *FileInfo) (checked, bool) {
	p := svc.Path
	switch t.Kind {
	case monitrc.TestPermission:
		return checked{EventPermission, info.Mode != t.Perm,
			pick(info.Mode != t.Perm, fmt.Sprintf("permission test failed for %s -- current permission is %04o", p, info.Mode),
				"permission succeeded")}, true
	case monitrc.TestUID, monitrc.TestGID:
		return ownerTest(t, p, info), true
	case monitrc.TestTimestamp:
		if t.Changed {
			// A path missing when the engine began has the timestamp 0, so
			// its first look is a change (monit's addtimestamp).
			ch := !info.Timestamp.Equal(st.memo.timestamp)
			return checked{EventTimestamp, ch, pick(ch, "timestamp was changed for "+p, "timestamp was not changed for "+p)}, true
		}
		bad := compareNum(float64(int64(time.Since(info.Timestamp).Seconds())), t.Operator, t.Limit)
		return checked{EventTimestamp, bad, pick(bad, "timestamp test failed for "+p, "timestamp succeeded")}, true
	case monitrc.TestSize:
		if t.Changed {
			if !st.memo.seen && !st.memo.begun {
				return checked{}, false // the first look takes the size to compare with
			}
			ch := info.Size != st.memo.size
			return checked{EventSize, ch, pick(ch, "size was changed for "+p, "size was not changed")}, true
		}
		bad := compareNum(float64(info.Size), t.Operator, t.Limit)
		return checked{EventSize, bad, pick(bad, fmt.Sprintf("size test failed for %s -- current size is %d B", p, info.Size),
			"size succeeded")}, true
	case monitrc.TestFsflag:
		if !st.memo.seen || info.FS == nil {
			return checked{}, false
		}
		ch := info.FS.Flags != st.memo.flags
		return checked{EventFsflag, ch, pick(ch, fmt.Sprintf("filesytem flags changed to %#x", info.FS.Flags), "")}, true
	case monitrc.TestSpace, monitrc.TestInode:
		return fsTest(t, info.FS), info.FS != nil
	}
	return checked{}, false
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

// ownerTest compares the uid or gid with a test's user or group (a name or
// a number).
func ownerTest(t monitrc.Test, path string, info *FileInfo) checked {
	bit, have, word := EventUID, info.UID, "uid"
	if t.Kind == monitrc.TestGID {
		bit, have, word = EventGID, info.GID, "gid"
	}
	want, err := strconv.Atoi(t.Owner)
	if err != nil {
		var id string
		if t.Kind == monitrc.TestUID {
			u, uerr := user.Lookup(t.Owner)
			if uerr == nil {
				id = u.Uid
			}
		} else if g, gerr := user.LookupGroup(t.Owner); gerr == nil {
			id = g.Gid
		}
		if want, err = strconv.Atoi(id); err != nil {
			return checked{EventData, true, fmt.Sprintf("%s test: %s %s is unknown", word, word, t.Owner)}
		}
	}
	bad := have != want
	return checked{bit, bad, pick(bad, fmt.Sprintf("%s test failed for %s -- current %s is %d", word, path, word, have),
		word+" succeeded")}
}

// statfs reads a filesystem's usage, with monit's percentages.
func statfs(path string) (*FSInfo, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(path, &s); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", path, err)
	}
	fs := &FSInfo{Flags: int64(s.Flags), BlockSize: int64(s.Bsize), Blocks: int64(s.Blocks), Free: int64(s.Bavail),
		FreeTotal: int64(s.Bfree), Files: int64(s.Files), FilesFree: int64(s.Ffree)}
	fs.SpaceUsedBlocks = fs.Blocks - fs.FreeTotal
	fs.InodesUsed = fs.Files - fs.FilesFree
	if fs.Blocks > 0 {
		fs.SpacePercent = float64(int(1000*float64(fs.Blocks-fs.Free)/float64(fs.Blocks))) / 10
	}
	if fs.Files > 0 {
		fs.InodePercent = float64(int(1000*float64(fs.InodesUsed)/float64(fs.Files))) / 10
	}
	return fs, nil
}

// fsTest runs a space or inode test (absolute spaces are in blocks, as
// monit compares them).
func fsTest(t monitrc.Test, fs *FSInfo) checked {
	if fs == nil {
		return checked{}
	}
	what, pct, abs, unit := "inode usage", fs.InodePercent, fs.InodesUsed, ""
	limit := t.Limit
	if t.Kind == monitrc.TestSpace {
		what, pct, abs, unit = "space usage", fs.SpacePercent, fs.SpaceUsedBlocks, " blocks"
		if !t.Percent && fs.BlockSize > 0 {
			limit = float64(int64(t.Limit / float64(fs.BlockSize)))
		}
	}
	if t.Percent {
		bad := compareNum(pct, t.Operator, limit)
		return checked{EventResource, bad, pick(bad, fmt.Sprintf("%s %.1f%% matches resource limit [%s%s%.1f%%]",
			what, pct, what, t.Operator, limit), "filesystem resources succeeded")}
	}
	bad := compareNum(float64(abs), t.Operator, limit)
	return checked{EventResource, bad, pick(bad, fmt.Sprintf("%s %d%s matches resource limit [%s%s%d%s]",
		what, abs, unit, what, t.Operator, int64(limit), unit), "filesystem resources succeeded")}
}

// compareNum is monit's Util_evalQExpression.
func compareNum(v float64, op string, limit float64) bool {
	switch op {
	case ">":
		return v > limit
	case "<":
		return v < limit
	case "!=":
		return v != limit
	}
	return v == limit
}

// beginPath takes what the change tests of a path service compare with at
// their first look: the path's timestamp, size and checksum when the
// engine begins (monit's, when it reads the control file).
func beginPath(svc *monitrc.Service, st *svcState) {
	fi, err := os.Stat(svc.Path)
	if err != nil {
		return
	}
	sys := fi.Sys().(*syscall.Stat_t)
	st.memo.begun = true
	st.memo.timestamp = laterOf(time.Unix(sys.Mtim.Unix()), time.Unix(sys.Ctim.Unix()))
	st.memo.size, st.memo.inode = fi.Size(), sys.Ino
	for _, t := range svc.Tests {
		if t.Kind == monitrc.TestChecksum && t.Sum == "" {
			kind := t.Hash
			if kind == "" {
				kind = "md5"
			}
			st.memo.sum, _ = fileSum(svc.Path, kind)
		}
	}
}
