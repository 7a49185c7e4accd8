package job

import (
	"fmt"
	"strings"

	"github.com/vigil-bosh/vigil/internal/capability"
)

// checkCapability returns "" for a known name, else a message; bpm would
// prepend CAP_ and leave runc to reject or silently drop the name.
func checkCapability(name string) string {
	if _, ok := capability.Number(name); ok {
		return ""
	}
	fixed := strings.TrimPrefix(strings.ToUpper(name), "CAP_")
	if _, ok := capability.Number(fixed); ok {
		return fmt.Sprintf("unknown capability %q (did you mean %q?)", name, fixed)
	}
	return fmt.Sprintf("unknown capability %q: expected a Linux capability name without CAP_, such as NET_BIND_SERVICE", name)
}
