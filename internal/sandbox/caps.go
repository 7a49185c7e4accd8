package sandbox

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/internal/capability"
)

// PrivilegedCaps is the capability set of unsafe.privileged: every
// capability up to AUDIT_READ (Docker's privileged list, which bpm uses),
// that is all but PERFMON, BPF and CHECKPOINT_RESTORE.
func PrivilegedCaps() []int {
	out := make([]int, 0, 38)
	for i := 0; i <= 37; i++ {
		out = append(out, i)
	}
	return out
}

// CapNumbers resolves capability names (with or without CAP_) to numbers,
// returning the names it does not know.
func CapNumbers(names []string) (nums []int, unknown []string) {
	for _, n := range names {
		if c, ok := capability.Number(strings.TrimPrefix(strings.ToUpper(n), "CAP_")); ok {
			nums = append(nums, c)
		} else {
			unknown = append(unknown, n)
		}
	}
	return nums, unknown
}

// CapName is the name (without CAP_) of capability c, or its number.
func CapName(c int) string {
	if n := capability.Name(c); n != "" {
		return n
	}
	return strconv.Itoa(c)
}

// HasCapability reports whether the calling process has capability c in
// its effective set.
func HasCapability(c int) bool { return effectiveCaps()&(1<<uint(c)) != 0 }

// effectiveCaps is the calling thread's effective capability set (capget);
// empty when it cannot be read.
func effectiveCaps() uint64 {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0
	}
	return uint64(data[0].Effective) | uint64(data[1].Effective)<<32
}
