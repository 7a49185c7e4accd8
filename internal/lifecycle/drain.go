package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-bosh/vigil/boshpath"
)

// DrainKind is the director's drain type.
type DrainKind int

// The drain types.
const (
	Update   DrainKind = iota // the job is being updated
	Shutdown                  // the instance is stopping or going away
)

// DrainOptions configure Drain.
type DrainOptions struct {
	Layout boshpath.Layout
	Kind   DrainKind
	// For Update: what changed, as the agent computes it from the old and
	// new specs.
	JobNew      bool     // the old spec had no jobs: job_new instead of job_changed
	HashChanged bool     // hash_changed instead of hash_unchanged
	HashNew     bool     // the old spec had no hash: hash_new
	Packages    []string // names of new or changed packages
	// PersistentDisk is the current disk size in MiB, NextPersistentDisk
	// the next spec's. An update always has a next spec (the agent refuses
	// one without), so BOSH_JOB_NEXT_STATE is always set on an update: nil
	// means the disk does not change. A shutdown has a next spec only when
	// the director sends one: nil leaves BOSH_JOB_NEXT_STATE out.
	PersistentDisk     int
	NextPersistentDisk *int
	// Budget bounds the whole drain; zero means none. Scripts still
	// running when it ends are ended (TERM, then KILL).
	Budget time.Duration
	Jobs   []string // only these jobs; empty means every job with bin/drain
	// Wait returns a channel that fires after d (time.After when nil). It
	// is the clock of the waits the scripts ask for.
	Wait func(d time.Duration) <-chan time.Time
}

// ErrNotInteger is a drain script's output that is not a signed integer.
// Its text is the agent's own, capital letter included.
var ErrNotInteger = errors.New("Script did not return a signed integer")

// ParseDrainOutput reads a drain script's answer: a signed integer, with
// surrounding white space allowed, as the agent reads it.
func ParseDrainOutput(out string) (int, error) {
	s := strings.TrimSpace(out)
	n, err := strconv.Atoi(s)
	if err != nil {
		if len(s) > 60 {
			s = s[:60] + "..."
		}
		return 0, fmt.Errorf("%w: printed %q", ErrNotInteger, s)
	}
	return n, nil
}

// Drain runs ROOT/jobs/*/bin/drain of every job that has it, all at once,
// with BOSH's protocol: the first call gets the change arguments; an answer
// N >= 0 means wait N seconds and finish; N < 0 means wait -N seconds and
// call again with job_check_status, until an answer >= 0. Output other than
// an integer fails that job. Stopping the processes beforehand (unmonitor)
// is the caller's business.
func Drain(ctx context.Context, o DrainOptions) (Report, error) {
	jobs, err := jobsWith(o.Layout, "drain", o.Jobs)
	if err != nil {
		return Report{}, err
	}
	if o.Budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Budget, fmt.Errorf("the drain budget of %s ran out", o.Budget))
		defer cancel()
	}
	if o.Wait == nil {
		o.Wait = time.After
	}
	rep := Report{Name: "drain", Results: make([]Result, len(jobs))}
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			start := time.Now()
			last, err := drainJob(ctx, o, j)
			rep.Results[i] = Result{Job: j, Err: err, Duration: time.Since(start), Output: last.output, Exit: last.exit}
		})
	}
	wg.Wait()
	return rep, nil
}

// maxOutput bounds the answer a Result keeps.
const maxOutput = 200

// call is how a drain script's latest call ended.
type call struct {
	output string // its standard output, trimmed and bounded
	exit   string // "exit status N" or the signal that ended it
}

// drainJob runs one job's drain loop and returns its last call.
func drainJob(ctx context.Context, o DrainOptions, job string) (call, error) {
	args, env := o.firstCall()
	for {
		var out bytes.Buffer
		s := script{layout: o.Layout, job: job, name: "drain", args: args, env: env, stdout: &out}
		state, err := s.run(ctx)
		last := call{output: bounded(strings.TrimSpace(out.String())), exit: exitOf(state)}
		if errors.Is(err, ErrTimedOut) {
			return last, err
		}
		// As the agent: the exit code does not count, only the answer.
		n, perr := ParseDrainOutput(out.String())
		if perr != nil {
			if err != nil {
				return last, fmt.Errorf("%w (%v)", perr, err)
			}
			return last, perr
		}
		wait := n
		if wait < 0 {
			wait = -wait
		}
		select {
		case <-o.Wait(time.Duration(wait) * time.Second):
		case <-ctx.Done():
			return last, fmt.Errorf("%w waiting %ds to call again: %w", ErrTimedOut, wait, context.Cause(ctx))
		}
		if n >= 0 {
			return last, nil
		}
		args, env = []string{"job_check_status", "hash_unchanged"}, o.stateEnv(false)
	}
}

// bounded cuts s to maxOutput bytes.
func bounded(s string) string {
	if len(s) > maxOutput {
		return s[:maxOutput] + "..."
	}
	return s
}

// firstCall returns the arguments and environment of the first call.
func (o DrainOptions) firstCall() ([]string, []string) {
	if o.Kind == Shutdown {
		return []string{"job_shutdown", "hash_unchanged"}, o.stateEnv(true)
	}
	args := []string{"job_changed", "hash_unchanged"}
	if o.JobNew {
		args[0] = "job_new"
	}
	switch {
	case o.HashNew:
		args[1] = "hash_new"
	case o.HashChanged:
		args[1] = "hash_changed"
	}
	return append(args, slices.Sorted(slices.Values(o.Packages))...), o.stateEnv(true)
}

// stateEnv is BOSH_JOB_STATE and, when withNext and there is a next spec,
// BOSH_JOB_NEXT_STATE: JSON limited to the persistent disk, as the agent's
// (presented_job_state.go). The status calls have no next spec.
func (o DrainOptions) stateEnv(withNext bool) []string {
	state := func(disk int) string {
		b, _ := json.Marshal(struct {
			PersistentDisk int `json:"persistent_disk"`
		}{disk})
		return string(b)
	}
	env := []string{"BOSH_JOB_STATE=" + state(o.PersistentDisk)}
	switch {
	case !withNext:
	case o.NextPersistentDisk != nil:
		env = append(env, "BOSH_JOB_NEXT_STATE="+state(*o.NextPersistentDisk))
	case o.Kind == Update:
		env = append(env, "BOSH_JOB_NEXT_STATE="+state(o.PersistentDisk))
	}
	return env
}
