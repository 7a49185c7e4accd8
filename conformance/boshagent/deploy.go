//go:build conformance

package boshagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Step is one message of the deploy as the driver saw it: when it was
// sent (since the run began), how long until its final answer (for an
// asynchronous action, the get_task that gave it), and that answer.
type Step struct {
	Name   string        `json:"name"`
	At     time.Duration `json:"at"`
	Took   time.Duration `json:"took"`
	Result string        `json:"result"`
	Err    string        `json:"error,omitempty"`
}

// Run is one deploy: its steps and the times a release author asks for.
type Run struct {
	Label string    `json:"label"`
	Began time.Time `json:"began"` // the origin of every step's At (for the jobs' own logs' times)
	Steps []Step    `json:"steps"`
	// ApplyToRunning runs from the apply's request to the first get_state
	// that says running after the start; StartToRunning from the start's
	// request to the same answer; the second start's likewise.
	ApplyToRunning, StartToRunning, RestartToRunning time.Duration
	// DrainToStopped runs from the drain's request (update, then
	// shutdown) to the answer of the stop that follows it: the director's
	// stop (protocol 3) returns once no service is monitored or pending.
	DrainToStopped, ShutdownToStopped time.Duration
	Wire                              []Exchange `json:"wire"`
}

// pollState is how often the driver asks get_state while it waits for
// running: finer than the director's watch intervals (a second or more),
// so that the time the agent first says running is measured.
const pollState = 100 * time.Millisecond

// Deploy sends the deploy as the director and create-env send it: ping,
// the blobs, stop, apply, pre-start, start, get_state until running,
// post-start, post-deploy, drain update, stop, start, get_state until
// running, drain shutdown, stop, get_state. It stops at the first error,
// returning what ran.
func Deploy(ctx context.Context, c *Client, d Deployment, label string) (*Run, error) {
	r := &Run{Label: label}
	defer func() { r.Wire = c.Wire() }()
	c.Began = time.Now()
	r.Began = c.Began
	step := func(name string, f func() (string, error)) error {
		s := Step{Name: name, At: time.Since(c.Began)}
		res, err := f()
		s.Took, s.Result = time.Since(c.Began)-s.At, res
		if err != nil {
			s.Err = err.Error()
		}
		r.Steps = append(r.Steps, s)
		return err
	}
	// marks: when each marked step was sent, and when it was answered.
	sent, answered := map[string]time.Duration{}, map[string]time.Duration{}
	seq := c.deploySteps(ctx, d)
	for _, s := range seq {
		err := step(s.name, s.f)
		if err != nil {
			return r, fmt.Errorf("%s: %w", s.name, err)
		}
		last := r.Steps[len(r.Steps)-1]
		sent[s.mark], answered[s.mark] = last.At, last.At+last.Took
	}
	r.ApplyToRunning = answered["running"] - sent["apply"]
	r.StartToRunning = answered["running"] - sent["start"]
	r.RestartToRunning = answered["running again"] - sent["restart"]
	r.DrainToStopped = answered["stopped"] - sent["drain"]
	r.ShutdownToStopped = answered["stopped again"] - sent["shutdown"]
	return r, nil
}

// deployStep is one message of the deploy: its name, the mark under which
// its times count (or none), and how it is sent.
type deployStep struct {
	name, mark string
	f          func() (string, error)
}

// deploySteps is the deploy's messages in order (see Deploy).
func (c *Client) deploySteps(ctx context.Context, d Deployment) []deployStep {
	task := func(method string, args ...any) func() (string, error) {
		return func() (string, error) { v, err := c.Task(ctx, method, args...); return short(v), err }
	}
	running := func() (string, error) { return c.awaitState(ctx, "running", 2*time.Minute) }
	state := func() (string, error) { return c.awaitState(ctx, "", 0) }

	return []deployStep{
		{"ping", "", func() (string, error) { v, err := c.Call(ctx, "ping"); return short(v), err }},
		{"get_state", "", state},
		{"upload blobs", "", func() (string, error) { return c.upload(ctx, d.Blobs) }},
		{"stop", "", task("stop")},
		{"apply", "apply", task("apply", d.Spec)},
		{"get_state", "", state},
		{"run_script pre-start", "", task("run_script", "pre-start", map[string]any{})},
		{"start", "start", func() (string, error) { v, err := c.Call(ctx, "start"); return short(v), err }},
		{"get_state until running", "running", running},
		{"run_script post-start", "", task("run_script", "post-start", map[string]any{})},
		{"run_script post-deploy", "", task("run_script", "post-deploy", map[string]any{})},
		{"drain update", "drain", task("drain", "update", map[string]any{})},
		{"stop", "stopped", task("stop")},
		{"get_state", "", state},
		{"start", "restart", func() (string, error) { v, err := c.Call(ctx, "start"); return short(v), err }},
		{"get_state until running", "running again", running},
		{"drain shutdown", "shutdown", task("drain", "shutdown", map[string]any{})},
		{"stop", "stopped again", task("stop")},
		{"get_state", "", state},
	}
}

// upload puts every blob, in name order, and says how much.
func (c *Client) upload(ctx context.Context, blobs map[string][]byte) (string, error) {
	ids := make([]string, 0, len(blobs))
	for id := range blobs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var parts []string
	for _, id := range ids {
		if err := c.PutBlob(ctx, id, blobs[id]); err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s %d KiB", id, len(blobs[id])>>10))
	}
	return strings.Join(parts, ", "), nil
}

// agentState is what get_state answers that the run looks at.
type agentState struct {
	JobState  string `json:"job_state"`
	Processes []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	} `json:"processes"`
}

func (s agentState) String() string {
	var ps []string
	for _, p := range s.Processes {
		ps = append(ps, p.Name+" "+p.State)
	}
	return "job_state " + s.JobState + " (" + strings.Join(ps, ", ") + ")"
}

// awaitState asks get_state every pollState until job_state is want
// (any, when want is ""), for at most within; the answer says how many
// asks it took.
func (c *Client) awaitState(ctx context.Context, want string, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(pollState)
	defer tick.Stop()
	for n := 1; ; n++ {
		v, err := c.Call(ctx, "get_state")
		var s agentState
		if err == nil {
			err = json.Unmarshal(v, &s)
		}
		if err != nil {
			return "", err
		}
		if want == "" || s.JobState == want {
			if n > 1 {
				return fmt.Sprintf("%s, at ask %d", s, n), nil
			}
			return s.String(), nil
		}
		if time.Now().After(deadline) {
			return s.String(), errors.New("not " + want + " within " + within.String())
		}
		select {
		case <-ctx.Done():
			return s.String(), ctx.Err()
		case <-tick.C: // the driver's own poll, measuring when the agent first says running
		}
	}
}

// short is a reply's value in a line of at most 120 bytes.
func short(v json.RawMessage) string {
	s := strings.Join(strings.Fields(string(v)), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// WaitForAgent pings until the agent answers pong or ctx ends, as
// create-env waits for a new VM's agent, and returns how long it took.
func WaitForAgent(ctx context.Context, c *Client) (time.Duration, error) {
	began := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		v, err := c.Call(ctx, "ping")
		if err == nil && string(v) == `"pong"` {
			c.mu.Lock()
			c.wire = nil // the run's record begins at the first answer
			c.mu.Unlock()
			return time.Since(began), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(began), fmt.Errorf("the agent never answered ping: %v: %w", err, ctx.Err())
		case <-tick.C: // create-env's retry
		}
	}
}
