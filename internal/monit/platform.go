package monit

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Platform is the XML's platform block: the kernel (uname), the CPUs and
// the memory and swap in kilobytes.
type Platform struct {
	Name, Release, Version, Machine string
	CPUs                            int
	MemKB, SwapKB                   int64
}

// ThisPlatform describes this machine.
func ThisPlatform() *Platform {
	p := &Platform{Name: "Linux", CPUs: runtime.NumCPU()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		p.Name, p.Release = unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Release[:])
		p.Version, p.Machine = unix.ByteSliceToString(u.Version[:]), unix.ByteSliceToString(u.Machine[:])
	}
	if m, err := meminfo(); err == nil {
		p.MemKB, p.SwapKB = m["MemTotal"], m["SwapTotal"]
	}
	return p
}
