package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

// stateLabel is a state's CSS class: one of a fixed set, whatever the
// backend says.
func stateLabel(state string) string {
	switch state {
	case "running", "starting", "backoff", "stopping", "stopped", "failed":
		return "state-" + state
	}
	return "state-other"
}

// formatDuration shows the two largest units: 3d 4h, 4h 12m, 12m 5s, 5s.
func formatDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	parts := []struct {
		n    int64
		unit string
	}{{s / 86400, "d"}, {s % 86400 / 3600, "h"}, {s % 3600 / 60, "m"}, {s % 60, "s"}}
	for i, p := range parts[:3] {
		if p.n > 0 {
			return fmt.Sprintf("%d%s %d%s", p.n, p.unit, parts[i+1].n, parts[i+1].unit)
		}
	}
	return fmt.Sprintf("%ds", s)
}

// formatCPU shows CPU time: 0.03 s, 12.5 s, 3m 20s.
func formatCPU(sec float64) string {
	switch {
	case sec < 10:
		return fmt.Sprintf("%.2f s", sec)
	case sec < 60:
		return fmt.Sprintf("%.1f s", sec)
	}
	return formatDuration(time.Duration(sec * float64(time.Second)))
}

// formatBytes shows a size in binary units with one decimal.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// problemText is a problem as file:line: field: message.
func problemText(p control.Problem) string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}
