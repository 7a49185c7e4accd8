package job

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-bosh/vigil/boshpath"
)

// What the kernel allows a start (Linux's limits, the same on every
// architecture vigil builds for).
const (
	// nameMax is the longest file name (NAME_MAX), in bytes.
	nameMax = 255
	// sunPathMax is the longest path of a unix socket, without its NUL.
	sunPathMax = 107
	// argStrMax is the longest argument or environment string exec takes,
	// with its NUL (MAX_ARG_STRLEN: 32 pages of 4 KiB).
	argStrMax = 32 * 4096
	// argTotalMax is what exec takes of arguments and environment
	// together, strings and pointers, with the default 8 MiB stack (a
	// quarter of it).
	argTotalMax = 8 << 20 / 4
	// minOpenFiles is the smallest RLIMIT_NOFILE an executable starts
	// with: stdin, stdout and stderr take descriptors 0 to 2, and the
	// dynamic loader opens each library on the next.
	minOpenFiles = 4
)

// checkStartable applies vigil's checks of what bpm accepts but a start
// could never do: names that cannot become file names or print on one
// line, strings exec refuses, limits under which nothing starts. bpm
// reports these at the start, or never (a process that fails to start
// over and over); vigil refuses the file, so that a reload keeps what
// runs. Each message says why.
func checkStartable(c *collector, l boshpath.Layout, p *Process) {
	if p.Name != "" {
		if err := checkNameText(p.Name); err != nil {
			c.check(p.field("name"), err, "%v (bpm accepts it)", err)
		} else if what, n := tooLongFileName(p); n > 0 {
			c.check(p.field("name"), nil, "name is %d bytes: %s would be %d bytes, past the %d a file name may have, "+
				"so the process could never start (bpm accepts the name and fails at start)", len(p.Name), what, n, nameMax)
		}
	}
	checkExecStrings(c, l, p)
	if f := p.Limits.OpenFiles; f != nil {
		least, taken := uint64(minOpenFiles), "stdin, stdout and stderr take descriptors 0 to 2"
		if p.Health.Notify == "fd" && p.Health.NotifyFD == minOpenFiles-1 {
			least, taken = least+1, "stdin, stdout, stderr and the notify fd take descriptors 0 to 3"
		}
		if *f < least {
			c.check(p.field("limits.open_files"), nil, "open_files must be at least %d, but got %d: %s, and the dynamic "+
				"loader opens each library on the next, so the executable could never start (EMFILE); bpm accepts it "+
				"and fails at start", least, *f, taken)
		}
	}
	if n := p.Limits.Processes; n != nil && *n < 1 {
		// bpm hands the number to runc, which reads 0 as "not set" and a
		// negative number as "max": a file that runs under bpm runs here.
		f := p.field("limits.processes")
		c.warn(lineOf(c.lines, f), f, "processes %d sets no limit (bpm's runc reads 0 and negative numbers as none), "+
			"so vigil applies none: give a positive number to bound the process's tasks, or leave the key out", *n)
		p.Limits.Processes = nil
	}
	if p.Health.Notify == "systemd" && p.Name != "" {
		if sock := notifySocket(l, p); len(sock) > sunPathMax {
			c.check(p.field("health.notify"), nil, "the notification socket %s would be %d bytes, past the %d a unix socket's "+
				"path may have, so the process could never start: shorten the process's or the job's name", sock, len(sock), sunPathMax)
		}
	}
}

// checkNameText refuses a job's or process's name that cannot be printed
// on one line: names are printed one to a line (bpm list, vigil status,
// monit's summary, the logs), where a control character would forge
// lines, and become file and cgroup names (the kernel refuses a newline
// in a cgroup's).
func checkNameText(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("name %q is not valid UTF-8, which the status and the APIs (JSON) cannot carry", name)
	}
	if i := strings.IndexFunc(name, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("name %q contains the control character %U: names are printed one to a line "+
			"(bpm list, vigil status, monit's summary), where it would forge lines", name, r)
	}
	return nil
}

// checkJobName is boshpath.CheckName and checkNameText: a job's name is
// its directory's, which anyone may have named.
func checkJobName(name string) error {
	if err := boshpath.CheckName(name); err != nil {
		return err
	}
	return checkNameText(name)
}

// tooLongFileName returns the first file name made from p's name (with
// its job's) that is too long, and its length; n is 0 when all fit.
func tooLongFileName(p *Process) (what string, n int) {
	logSuffix := ".stderr.log"
	if p.Logs.MaxSize > 0 {
		logSuffix += "." + strconv.Itoa(max(p.Logs.Keep, 1))
	}
	for _, f := range []struct {
		what string
		n    int
	}{
		{"its log file NAME" + logSuffix, len(p.Name) + len(logSuffix)},
		{"the temporary file its init record is written through (.NAME.json.NNNNNNNNNN)", len(p.Name) + len("..json.") + 10},
		{"bpm's lock file job-JOB.NAME.lock (each byte but letters, digits, '_' and '-' written as 3)",
			len("job-.lock") + escapedLen(p.Job+"."+p.Name, bpmPlain, 3)},
		{"its systemd unit vigil-JOB-NAME.service (each byte but letters, digits, ':', '_' and '.' written as 4)",
			len("vigil--.service") + escapedLen(p.Job, unitPlain, 4) + escapedLen(p.Name, unitPlain, 4)},
	} {
		if f.n > nameMax {
			return f.what, f.n
		}
	}
	return "", 0
}

// escapedLen is the length of s once each byte plain does not keep is
// written as width bytes.
func escapedLen(s string, plain func(byte) bool, width int) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if plain(s[i]) {
			n++
		} else {
			n += width
		}
	}
	return n
}

func alnum(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }

// bpmPlain: the bytes bpm's container ids keep as they are.
func bpmPlain(b byte) bool { return alnum(b) || b == '_' || b == '-' }

// unitPlain: the bytes systemd-escape keeps in a unit name (a leading '.'
// aside, which a process's name after "vigil-JOB-" never is).
func unitPlain(b byte) bool { return alnum(b) || b == ':' || b == '_' || b == '.' }

// notifySocket is the path of the process's systemd notification socket.
func notifySocket(l boshpath.Layout, p *Process) string {
	return l.TmpDir(p.Job) + "/vigil-" + p.Name + ".notify"
}

// checkExecStrings refuses what exec cannot pass: a NUL byte in a path,
// an argument or the environment (EINVAL), a string over argStrMax and
// arguments and environment over argTotalMax (E2BIG). Environment values
// are never quoted: they may be secrets.
func checkExecStrings(c *collector, l boshpath.Layout, p *Process) {
	const why = "so the process could never start (bpm accepts it and fails at start)"
	before := len(c.errs)
	for _, f := range [...][2]string{{"executable", p.Executable}, {"workdir", p.Workdir}, {"hooks.pre_start", p.Hooks.PreStart}} {
		if strings.IndexByte(f[1], 0) >= 0 {
			c.check(p.field(f[0]), nil, "the path contains a NUL byte, which no path can hold (exec fails with EINVAL), %s", why)
		}
	}
	for i, a := range p.Args {
		f := index(p.field("args"), i)
		switch {
		case strings.IndexByte(a, 0) >= 0:
			c.check(f, nil, "the argument contains a NUL byte, which exec cannot pass (EINVAL), %s", why)
		case len(a)+1 > argStrMax:
			c.check(f, nil, "the argument is %d bytes: exec refuses a string over %d (E2BIG: argument list too long), %s", len(a), argStrMax-1, why)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(p.Env)) {
		f, v := p.field("env."+k), p.Env[k]
		switch {
		case strings.IndexByte(v, 0) >= 0:
			c.check(f, nil, "the value (not shown) contains a NUL byte, which exec cannot pass (EINVAL), %s", why)
		case len(k)+len(v)+2 > argStrMax:
			c.check(f, nil, "the value (not shown) is %d bytes: exec refuses an environment string (KEY=VALUE) over %d bytes "+
				"(E2BIG: argument list too long), %s", len(v), argStrMax-1, why)
		}
	}
	if total := execSize(l, p); total > argTotalMax && len(c.errs) == before {
		c.check(p.field("env"), nil, "the arguments and the environment come to %d bytes: exec refuses more than %d "+
			"(E2BIG: argument list too long, with the default 8 MiB stack), %s", total, argTotalMax, why)
	}
}

// execSize is what exec counts of p's arguments and environment: each
// string with its NUL and a pointer to it. The notification variables
// the start adds are counted too.
func execSize(l boshpath.Layout, p *Process) int {
	env := p.Environ(l)
	if p.Health.Notify == "systemd" {
		env = append(env, "NOTIFY_SOCKET="+notifySocket(l, p), "WATCHDOG_USEC=18446744073709551615")
	}
	n := 8 * (2 + len(p.Args) + len(env))
	for _, s := range append(append([]string{p.Executable}, p.Args...), env...) {
		n += len(s) + 1
	}
	return n
}

// nrOpenPath holds the largest RLIMIT_NOFILE this machine allows.
const nrOpenPath = "/proc/sys/fs/nr_open"

// checkOpenFilesHere refuses an open_files above this machine's
// fs.nr_open, which no one may set (setrlimit fails with EPERM, root's
// too); it is checked where the executables are, on the machine that
// runs the process.
func checkOpenFilesHere(p *Process) *ConfigError {
	f := p.Limits.OpenFiles
	if f == nil {
		return nil
	}
	b, err := os.ReadFile(nrOpenPath)
	if err != nil {
		return nil // no /proc: nothing to compare with
	}
	limit, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || *f <= limit {
		return nil
	}
	field := p.field("limits.open_files")
	return &ConfigError{File: p.Source.File, Line: lineOf(p.at.lines, field), Field: field,
		Msg: fmt.Sprintf("open_files is %d, above this machine's fs.nr_open (%d): setrlimit refuses it (EPERM), so the "+
			"process could never start here (bpm's runc fails the same way)", *f, limit)}
}
