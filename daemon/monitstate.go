package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vigil-bosh/vigil/atomicfile"
	"github.com/vigil-bosh/vigil/monitcompat"
	"github.com/vigil-bosh/vigil/supervise"
)

// monitState is what survives a daemon restart, as monit's state file:
// the services that were not monitored stay so (and are not started).
type monitState struct {
	Unmonitored []string `json:"unmonitored"`
	// Incarnation is the last one served: the next daemon's must differ
	// even when it starts within the same second (the agent waits for a
	// new one after killing and restarting monit).
	Incarnation int64 `json:"incarnation,omitempty"`
}

func (d *Daemon) monitStatePath() string {
	return filepath.Join(d.cfg.Layout.VigilRunDir(), "monit.state")
}

func (d *Daemon) loadMonitState() monitState {
	var st monitState
	data, err := os.ReadFile(d.monitStatePath())
	if err != nil {
		return st
	}
	if err := json.Unmarshal(data, &st); err != nil {
		d.log.Warn("monit state file ignored", "error", err)
		return monitState{}
	}
	return st
}

// readMonitState returns the lower-cased names of the services recorded
// as not monitored; a missing or unreadable file records none.
func (d *Daemon) readMonitState() map[string]bool {
	out := map[string]bool{}
	for _, n := range d.loadMonitState().Unmonitored {
		out[strings.ToLower(n)] = true
	}
	return out
}

// writeMonitState records the services of e that are not monitored,
// atomically (a new file renamed over the old one).
func (d *Daemon) writeMonitState(e *monitcompat.Engine) error {
	st := monitState{Incarnation: e.Incarnation()}
	for _, s := range e.Config().Services {
		if u, ok := e.Unit(s.Name); ok && u.Status().Monitor == monitcompat.NotMonitored {
			st.Unmonitored = append(st.Unmonitored, s.Name)
		}
	}
	return d.saveMonitState(st)
}

// saveMonitState writes st atomically (a new file renamed over the old).
func (d *Daemon) saveMonitState(st monitState) error {
	slices.Sort(st.Unmonitored)
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode monit state: %w", err)
	}
	path := d.monitStatePath()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("write monit state: %w", err)
	}
	// Replaced whole (mode 0600): a symlink planted there is never followed.
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("monit state: %w", err)
	}
	return nil
}

// serviceOf names the service supervised as id, or "".
func (m *monitLoad) serviceOf(id supervise.ID) string {
	for _, s := range m.cfg.Services {
		if m.ids[strings.ToLower(s.Name)] == id {
			return s.Name
		}
	}
	return ""
}

// mode is the monit mode of the service supervised as id.
func (m *monitLoad) mode(id supervise.ID) string {
	if s, ok := m.cfg.Lookup(m.serviceOf(id)); ok {
		return s.Mode
	}
	return ""
}
