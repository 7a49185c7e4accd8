package testproc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Environment variables of the inspecting behaviours.
const (
	EnvWrite = "TESTPROC_WRITE" // inspect: comma-separated files to try to create
	EnvList  = "TESTPROC_LIST"  // inspect: comma-separated directories to list
	EnvAlloc = "TESTPROC_ALLOC" // alloc: megabytes to allocate and touch
)

// more runs the behaviours that look at the process's environment. It
// reports false for a behaviour it does not know.
func more(behaviour string, rep reporter) (int, bool) {
	switch behaviour {
	case "notify":
		return notify(rep), true
	case "inspect":
		inspect(rep)
		rep.send("inspected")
		if os.Getenv(EnvHold) != "" {
			return serve(rep), true // stay up until a signal ends it
		}
		return 0, true
	case "alloc":
		rep.send("allocating")
		var keep [][]byte
		for range atoi(os.Getenv(EnvAlloc)) {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		rep.send("allocated %d", len(keep))
		return 0, true
	case "forkloop":
		// Start children that wait on a pipe until a start fails, then
		// report how many ran. They end when this process does.
		r, w, err := os.Pipe()
		if err != nil {
			rep.send("error %v", err)
			return 1, true
		}
		defer w.Close()
		n := 0
		for ; n < 10000; n++ {
			_, err := os.StartProcess("/bin/sh", []string{"sh", "-c", "read x"},
				&os.ProcAttr{Files: []*os.File{r, nil, nil}})
			if err != nil {
				rep.send("forked %d %v", n, err)
				return 0, true
			}
		}
		rep.send("forked %d unlimited", n)
		return 0, true
	}
	return 0, false
}

// inspect reports, one "see ..." line each, what the process is and what
// it can do: ids, capabilities, no_new_privs, seccomp, its pids in each
// PID namespace and its CPUs and memory nodes from /proc/self/status, its
// namespaces (ns/mnt, ns/pid, ns/ipc, ns/uts), rlimits, writes, directory listings, and two probes of
// the seccomp filter, its working directory and its bpm environment
// (TMPDIR HOME PATH).
func inspect(rep reporter) {
	rep.send("see ids %d %d %d %d", os.Getuid(), os.Getgid(), os.Getpid(), os.Getppid())
	groups, _ := syscall.Getgroups()
	rep.send("see groups %d", len(groups))
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			switch k {
			case "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp",
				"NSpid", "Cpus_allowed_list", "Mems_allowed_list":
				rep.send("see %s %s", k, strings.TrimSpace(v))
			}
		}
	}
	for _, ns := range []string{"mnt", "pid", "ipc", "uts"} {
		link, _ := os.Readlink("/proc/self/ns/" + ns)
		rep.send("see ns/%s %s", ns, link)
	}
	for name, res := range map[string]int{"nofile": syscall.RLIMIT_NOFILE, "core": syscall.RLIMIT_CORE} {
		var rl syscall.Rlimit
		_ = syscall.Getrlimit(res, &rl)
		rep.send("see %s %d %d", name, rl.Cur, rl.Max)
	}
	for _, p := range split(os.Getenv(EnvWrite)) {
		err := os.WriteFile(p, []byte("x"), 0o600)
		rep.send("see write %s %s", p, errText(err))
	}
	for _, d := range split(os.Getenv(EnvList)) {
		entries, err := os.ReadDir(d)
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if err != nil {
			names = []string{errText(err)}
		}
		rep.send("see list %s %s", d, strings.Join(names, ","))
	}
	_, _, e := syscall.RawSyscall(syscall.SYS_UNSHARE, 0, 0, 0)
	rep.send("see unshare %s", errnoText(e))
	_, _, e = syscall.RawSyscall(sysClone3, 0, 0, 0)
	rep.send("see clone3 %s", errnoText(e))
	rep.send("see pidfd_getfd %s", errnoText(takeOwnFD()))
	if exe, err := os.Executable(); err == nil {
		rep.send("see exe %s", filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		rep.send("see cwd %s", wd)
	}
	rep.send("see env %s %s %s", os.Getenv("TMPDIR"), os.Getenv("HOME"), os.Getenv("PATH"))
}

// takeOwnFD takes a copy of this process's fd 0 through pidfd_getfd, as a
// process could take another's descriptors (and read its secrets through
// them), and returns the errno.
func takeOwnFD() syscall.Errno {
	pidfd, _, e := syscall.RawSyscall(unix.SYS_PIDFD_OPEN, uintptr(os.Getpid()), 0, 0)
	if e != 0 {
		return e
	}
	defer syscall.Close(int(pidfd))
	fd, _, e := syscall.RawSyscall(unix.SYS_PIDFD_GETFD, pidfd, 0, 0)
	if e == 0 {
		syscall.Close(int(fd))
	}
	return e
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func errText(err error) string {
	var errno syscall.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return errnoText(errno)
	}
	return "error"
}

func errnoText(e syscall.Errno) string {
	names := map[syscall.Errno]string{0: "ok", syscall.EPERM: "EPERM", syscall.ENOSYS: "ENOSYS",
		syscall.EACCES: "EACCES", syscall.EROFS: "EROFS", syscall.ENOENT: "ENOENT",
		syscall.EFAULT: "EFAULT", syscall.EINVAL: "EINVAL"}
	if n, ok := names[e]; ok {
		return n
	}
	return "errno" + strings.TrimSpace(e.Error())
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
