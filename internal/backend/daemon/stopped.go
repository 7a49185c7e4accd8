package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/vigil-bosh/vigil/internal/atomicfile"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

// stoppedState remembers, across daemon restarts, the processes an
// operator stopped (vigil stop, bpm stop, the status page), as monit's state
// file remembers its unmonitored services: the next daemon does not start
// them, and finishes a stop that a daemon killed mid-ladder left undone.
// It lives in ROOT/sys/run/vigil (a tmpfs on BOSH VMs, so a reboot forgets
// it, as the agent expects) and is used when no monit control files are in
// force: under the agent, monit.state plays this part. Its zero value is
// ready; mu serialises the file's updates.
type stoppedState struct {
	mu sync.Mutex
}

func (d *Daemon) stoppedPath() string {
	return filepath.Join(d.cfg.Layout.VigilRunDir(), "stopped.json")
}

// readStopped returns the recorded processes; a missing or unreadable file
// records none (an unreadable one is logged).
func (d *Daemon) readStopped() map[supervise.ID]bool {
	out := map[supervise.ID]bool{}
	data, err := os.ReadFile(d.stoppedPath())
	if err != nil {
		return out
	}
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		d.log.Warn("stopped-process file ignored", "file", d.stoppedPath(), "error", err)
		return out
	}
	for _, n := range names {
		if job, proc, ok := strings.Cut(n, "/"); ok {
			out[supervise.ID{Job: job, Process: proc}] = true
		}
	}
	return out
}

// markStopped records ids as stopped (down) or not (!down). It is called
// before the action is sent, so a daemon killed while the action runs
// leaves the intent for the next one.
func (d *Daemon) markStopped(ids []supervise.ID, down bool) error {
	d.stopped.mu.Lock()
	defer d.stopped.mu.Unlock()
	set := d.readStopped()
	for _, id := range ids {
		if down {
			set[id] = true
		} else {
			delete(set, id)
		}
	}
	list := make([]string, 0, len(set))
	for id := range set {
		if _, ok := d.tree.Get(id); ok { // forget processes no longer configured
			list = append(list, id.String())
		}
	}
	slices.Sort(list)
	data, err := json.Marshal(list)
	if err != nil {
		return fmt.Errorf("encode stopped processes: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(d.stoppedPath()), 0o700); err != nil {
		return fmt.Errorf("stopped processes: %w", err)
	}
	if err := atomicfile.Write(d.stoppedPath(), data, 0o600); err != nil {
		return fmt.Errorf("stopped processes: %w", err)
	}
	return nil
}

// rememberAction records what an operator's stop or start means for the
// next daemon, when no monit control files are in force. A failure to
// record is logged; the action goes ahead.
func (d *Daemon) rememberAction(verb supervise.Verb, sups []*supervise.Supervisor) {
	if d.cur.Load().extended || verb == supervise.VerbUnmonitor {
		return
	}
	ids := make([]supervise.ID, len(sups))
	for i, s := range sups {
		ids[i] = s.ID()
	}
	if err := d.markStopped(ids, verb == supervise.VerbStop); err != nil {
		d.log.Warn("remember the action for the next daemon", "error", err)
	}
}
