package monitext

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/atomicfile"
	"github.com/vigil-bosh/vigil/internal/monit"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
)

// monitState is what survives a daemon restart, as monit's state file:
// the services that were not monitored stay so (and are not started).
type monitState struct {
	Unmonitored []string `json:"unmonitored"`
	// Stopping names the services whose stop was asked for (recorded
	// before it runs) and whose process may still run: the next daemon
	// stops them again, so that a stop is never undone by a crash.
	Stopping []string `json:"stopping,omitempty"`
	// Incarnation is the last one served: the next daemon's must differ
	// even when it starts within the same second (the agent waits for a
	// new one after killing and restarting monit).
	Incarnation int64 `json:"incarnation,omitempty"`
	// Owners maps each service name in force (lower-cased) to the control
	// file that defines it: when two files define one name, the next
	// daemon keeps the definition that ran (monitrc.LoadSince).
	Owners map[string]string `json:"owners,omitempty"`
}

// owners maps each service of cfg (lower-cased) to its file.
func owners(cfg *monitrc.Config) map[string]string {
	out := map[string]string{}
	for _, s := range cfg.Services {
		if s.File != "" {
			out[strings.ToLower(s.Name)] = s.File
		}
	}
	return out
}

func monitStatePath(l boshpath.Layout) string {
	return filepath.Join(l.VigilRunDir(), "monit.state")
}

// stateFile reads and writes monit.state; mu orders the writes of what
// an engine persists, so that the last one written is the latest.
type stateFile struct {
	path string
	log  *slog.Logger
	mu   *sync.Mutex
}

func (f stateFile) load() monitState {
	var st monitState
	data, err := os.ReadFile(f.path)
	if err != nil {
		return st
	}
	if err := json.Unmarshal(data, &st); err != nil {
		f.log.Warn("monit state file ignored", "error", err)
		return monitState{}
	}
	return st
}

// write records what e persists (monit.Engine.Persisted): the services
// not monitored and those whose stop may not be finished.
func (f stateFile) write(e *monit.Engine) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := monitState{Incarnation: e.Incarnation(), Owners: owners(e.Config())}
	st.Unmonitored, st.Stopping = e.Persisted()
	return f.save(st)
}

// save writes st atomically (a new file renamed over the old).
func (f stateFile) save(st monitState) error {
	slices.Sort(st.Unmonitored)
	slices.Sort(st.Stopping)
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode monit state: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o750); err != nil {
		return fmt.Errorf("write monit state: %w", err)
	}
	// Replaced whole (mode 0600): a symlink planted there is never followed.
	if err := atomicfile.Write(f.path, data, 0o600); err != nil {
		return fmt.Errorf("monit state: %w", err)
	}
	return nil
}
