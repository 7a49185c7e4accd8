package systemd

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vigil-bosh/vigil/control"
)

// systemctl runs the systemctl binary at path.
type systemctl struct{ path string }

func (s systemctl) run(ctx context.Context, args ...string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, s.path, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("systemctl %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return out, nil
}

// showProps are the properties Status reads, in one systemctl call.
const showProps = "Id,ActiveState,SubState,MainPID,NRestarts,ExecMainCode,ExecMainStatus,ExecMainExitTimestamp," +
	"StateChangeTimestamp,ExecMainStartTimestampMonotonic"

// timestampLayout is systemctl show's format for timestamps.
const timestampLayout = "Mon 2006-01-02 15:04:05 MST"

// unitState is what systemctl show says about one unit.
type unitState struct {
	ID, Active, Sub    string
	MainPID, NRestarts int
	ExitCode, Status   int // ExecMainCode (CLD_EXITED, CLD_KILLED, CLD_DUMPED) and ExecMainStatus
	Since, ExitedAt    time.Time
	StartedMono        int64 // ExecMainStartTimestampMonotonic: µs since boot at the main process's start
}

// instance numbers the unit's runs: each start of its main process has a
// later start time (zero before the first).
func (u unitState) instance() int { return int(u.StartedMono) }

// show reads the state of units, keyed by unit name.
func (s systemctl) show(ctx context.Context, units []string) (map[string]unitState, error) {
	out := map[string]unitState{}
	if len(units) == 0 {
		return out, nil
	}
	text, err := s.run(ctx, append([]string{"show", "-p", showProps, "--"}, units...)...)
	if err != nil {
		return nil, err
	}
	var cur unitState
	flush := func() {
		if cur.ID != "" {
			out[cur.ID] = cur
		}
		cur = unitState{}
	}
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			flush()
			continue
		}
		switch k {
		case "Id":
			cur.ID = v
		case "ActiveState":
			cur.Active = v
		case "SubState":
			cur.Sub = v
		case "MainPID":
			cur.MainPID, _ = strconv.Atoi(v)
		case "NRestarts":
			cur.NRestarts, _ = strconv.Atoi(v)
		case "ExecMainCode":
			cur.ExitCode, _ = strconv.Atoi(v)
		case "ExecMainStatus":
			cur.Status, _ = strconv.Atoi(v)
		case "StateChangeTimestamp":
			cur.Since, _ = time.Parse(timestampLayout, v)
		case "ExecMainExitTimestamp":
			cur.ExitedAt, _ = time.Parse(timestampLayout, v)
		case "ExecMainStartTimestampMonotonic":
			cur.StartedMono, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	flush()
	return out, nil
}

// State maps a unit's active state and sub-state onto vigil's states.
func State(active, sub string) string {
	switch active {
	case "active", "reloading":
		return "running"
	case "activating":
		if sub == "auto-restart" {
			return "backoff" // waiting RestartSec before the next start
		}
		return "starting" // start-pre (the hook), start, start-post
	case "deactivating":
		return "stopping"
	case "failed":
		return "failed"
	}
	return "stopped" // inactive, maintenance, or unknown
}

// The values of ExecMainCode (siginfo's si_code).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// lastExit describes the main process's last exit, nil before the first.
// The main process is `vigil exec`, which exits as its executable did
// (128+N for a signal).
func (u unitState) lastExit() *control.Exit {
	var e control.Exit
	switch u.ExitCode {
	case cldExited:
		e.Code = u.Status
		if u.Status > 128 && u.Status < 128+65 {
			e.Signal = unix.SignalName(unix.Signal(u.Status - 128))
		}
	case cldKilled, cldDumped:
		e.Signal = unix.SignalName(unix.Signal(u.Status))
	default:
		return nil
	}
	e.At = u.ExitedAt
	e.Description = fmt.Sprintf("exit code %d", e.Code)
	if e.Signal != "" {
		e.Description = "killed by " + e.Signal
	}
	return &e
}
