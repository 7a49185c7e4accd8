package launch

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/internal/launch/procinit"
	"github.com/vigil-bosh/vigil/internal/sandbox"
)

// Confinement is where commands started for a running executable run, as
// runc exec runs them for bpm: inside its sandbox (namespaces, root, user;
// see sandbox.Entry), on the host as its user (isolation: host), or on the
// host as the caller when it has neither (isolation off).
type Confinement struct{ entry *sandbox.Entry }

// ConfinementOf is the confinement of the executable with host pid exe.
// The caller closes it.
func ConfinementOf(exe int) (*Confinement, error) {
	e, err := sandbox.Enter(exe)
	if err != nil {
		return nil, err
	}
	return &Confinement{entry: e}, nil
}

// Confined reports whether commands start inside a sandbox, and so see
// the job's directories where the sandbox mounts them (below /var/vcap).
func (c *Confinement) Confined() bool { return c.entry != nil && c.entry.Joins() }

// Start starts cmd in the confinement. cmd.Path may be a bare name, looked
// up in the PATH of cmd.Env where cmd runs. The caller waits for cmd.
func (c *Confinement) Start(cmd *exec.Cmd) error {
	if c.entry != nil {
		return c.entry.Start(cmd)
	}
	if !strings.Contains(cmd.Path, "/") {
		path, err := lookPath(cmd.Path, cmd.Env)
		if err != nil {
			return err
		}
		cmd.Path = path
	}
	return cmd.Start()
}

// Close releases the executable.
func (c *Confinement) Close() error {
	if c.entry == nil {
		return nil
	}
	return c.entry.Close()
}

// StartInside starts cmd in the confinement of the executable with host
// pid exe (see Confinement.Start).
func StartInside(exe int, cmd *exec.Cmd) error {
	c, err := ConfinementOf(exe)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Start(cmd)
}

// lookPath finds name in env's PATH on the host, as execvp would.
func lookPath(name string, env []string) (string, error) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(v) {
				if p := filepath.Join(dir, name); filepath.IsAbs(p) {
					if _, err := exec.LookPath(p); err == nil {
						return p, nil
					}
				}
			}
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// ExecutableOf returns the host pid of the executable below the init with
// host pid init, or 0.
func ExecutableOf(init int) int {
	if kids := procinit.ChildrenOf(init); len(kids) > 0 {
		return kids[0]
	}
	return 0
}

// StartInside is the package's StartInside for this runner's running
// executable; with none running, cmd is not started and the error says so.
func (r *Runner) StartInside(cmd *exec.Cmd) error {
	if pr := r.current.Load(); pr != nil {
		if exe := pr.execPIDValue(); exe > 0 {
			return StartInside(exe, cmd)
		}
	}
	return errNoExecutable
}

var errNoExecutable = errors.New("the executable is not running")
