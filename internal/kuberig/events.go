package kuberig

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// TaskEvent is a container's start or exit, as containerd reported it.
type TaskEvent struct {
	Time      time.Time
	Pod       string // the static pod's name, without the node's
	Container string
	ID        string
	Exit      bool
	Status    int // the exit status, for an exit
}

// eventLog follows containerd's event stream (ctr events) for the rig's
// life: each container's starts and exits, with their times, named from
// the CRI when the container starts (the kubelet removes containers soon
// after a pod is deleted, and their exit codes with them).
type eventLog struct {
	cmd *exec.Cmd
	// crictl names a container from its id.
	crictl func(args ...string) (string, error)

	mu     sync.Mutex
	names  map[string][2]string // id → pod, container
	events []TaskEvent
	wake   chan struct{} // closed at each new event
	done   chan struct{} // closed once the stream has ended
}

func followEvents(socket, crictl, config string) (*eventLog, error) {
	l := &eventLog{names: map[string][2]string{}, wake: make(chan struct{}), done: make(chan struct{}),
		crictl: func(args ...string) (string, error) {
			out, err := exec.Command(crictl, append([]string{"--config", config}, args...)...).Output()
			return string(out), err
		}}
	l.cmd = exec.Command("ctr", "--address", socket, "events")
	out, err := l.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := l.cmd.Start(); err != nil {
		return nil, fmt.Errorf("kuberig: ctr events: %w", err)
	}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.line(sc.Text())
		}
		l.cmd.Wait()
	}()
	return l, nil
}

// line records one line of ctr events: "DATE TIME ZONE NAME NAMESPACE
// TOPIC JSON".
func (l *eventLog) line(s string) {
	f := strings.SplitN(s, " ", 7)
	if len(f) < 7 || f[4] != "k8s.io" || (f[5] != "/tasks/start" && f[5] != "/tasks/exit") {
		return
	}
	at, err := time.Parse("2006-01-02 15:04:05.999999999 -0700 MST", strings.Join(f[:4], " "))
	if err != nil {
		at = time.Now()
	}
	var body struct {
		ContainerID string `json:"container_id"`
		ID          string `json:"id"`
		ExitStatus  int    `json:"exit_status"`
	}
	if json.Unmarshal([]byte(f[6]), &body) != nil || body.ContainerID == "" || body.ID != body.ContainerID && f[5] == "/tasks/exit" {
		return // an exec's exit, not the container's
	}
	name, ok := l.name(body.ContainerID)
	if !ok {
		return // a pod's sandbox
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, TaskEvent{Time: at, Pod: name[0], Container: name[1], ID: body.ContainerID,
		Exit: f[5] == "/tasks/exit", Status: body.ExitStatus})
	close(l.wake)
	l.wake = make(chan struct{})
}

// name returns the pod and container of an id, asking the CRI the first
// time (at its start, while it exists).
func (l *eventLog) name(id string) ([2]string, bool) {
	l.mu.Lock()
	n, ok := l.names[id]
	l.mu.Unlock()
	if ok {
		return n, n != [2]string{}
	}
	out, err := l.crictl("inspect", "-o", "json", id)
	var info struct {
		Status struct {
			Metadata struct{ Name string }
			Labels   map[string]string
		}
	}
	if err == nil && json.Unmarshal([]byte(out), &info) == nil {
		n = [2]string{strings.TrimSuffix(info.Status.Labels["io.kubernetes.pod.name"], "-"+nodeName), info.Status.Metadata.Name}
	}
	l.mu.Lock()
	l.names[id] = n
	l.mu.Unlock()
	return n, n != [2]string{}
}

// Events returns the events of pod so far.
func (l *eventLog) Events(pod string) []TaskEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []TaskEvent
	for _, e := range l.events {
		if e.Pod == pod {
			out = append(out, e)
		}
	}
	return out
}

// Wait blocks until cond holds for the events of pod, or ctx ends.
func (l *eventLog) Wait(ctx context.Context, pod string, cond func([]TaskEvent) bool) ([]TaskEvent, error) {
	for {
		l.mu.Lock()
		wake := l.wake
		l.mu.Unlock()
		evs := l.Events(pod)
		if cond(evs) {
			return evs, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return evs, fmt.Errorf("kuberig: pod %s's containers: %w", pod, ctx.Err())
		}
	}
}

func (l *eventLog) close() {
	_ = l.cmd.Process.Kill()
	<-l.done
}
