package kuberig

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Import imports an image archive (docker-archive or OCI) into the CRI's
// namespace of containerd: pods name it with imagePullPolicy Never or
// IfNotPresent, and no registry is asked.
func (r *Rig) Import(ctx context.Context, archive string) error {
	out, err := exec.CommandContext(ctx, "ctr", "--address", r.socket(), "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kuberig: ctr images import %s: %w: %s", archive, err, out)
	}
	return nil
}

// Apply puts a static pod's manifest in place (whole: written beside it,
// then renamed); the kubelet picks it up within a second.
func (r *Rig) Apply(name string, manifest []byte) error {
	tmp := filepath.Join(r.dir, "run", name+".yaml")
	if err := os.WriteFile(tmp, manifest, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.dir, "manifests", name+".yaml"))
}

// Delete removes a static pod's manifest: the kubelet deletes the pod,
// with its preStop hooks and its terminationGracePeriodSeconds.
func (r *Rig) Delete(name string) error {
	return os.Remove(filepath.Join(r.dir, "manifests", name+".yaml"))
}

// PodStatus is what the kubelet says of a pod.
type PodStatus struct {
	Phase      string
	PodIP      string
	Containers []ContainerStatus
}

// ContainerStatus is one container's status.
type ContainerStatus struct {
	Name         string
	Ready        bool
	RestartCount int
	ContainerID  string // containerd://ID
	State        map[string]struct {
		ExitCode int    `json:"exitCode"`
		Reason   string `json:"reason"`
	}
	LastState map[string]struct {
		ExitCode int    `json:"exitCode"`
		Reason   string `json:"reason"`
	} `json:"lastState"`
}

// Container returns the status of the container name.
func (s PodStatus) Container(name string) (ContainerStatus, bool) {
	for _, c := range s.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return ContainerStatus{}, false
}

// Ready reports whether every container is ready.
func (s PodStatus) Ready() bool {
	for _, c := range s.Containers {
		if !c.Ready {
			return false
		}
	}
	return len(s.Containers) > 0
}

// Pod returns the kubelet's status of the static pod name, and false when
// the kubelet has no such pod.
func (r *Rig) Pod(ctx context.Context, name string) (PodStatus, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.kubeletURL+"/pods", nil)
	if err != nil {
		return PodStatus{}, false, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return PodStatus{}, false, fmt.Errorf("kuberig: the kubelet's /pods: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Status   struct {
				Phase             string
				PodIP             string `json:"podIP"`
				ContainerStatuses []ContainerStatus
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return PodStatus{}, false, fmt.Errorf("kuberig: the kubelet's /pods: %w", err)
	}
	for _, p := range list.Items {
		if p.Metadata.Name == name+"-"+nodeName {
			return PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, Containers: p.Status.ContainerStatuses}, true, nil
		}
	}
	return PodStatus{}, false, nil
}

// WaitPod polls the pod's status every 250 ms (the kubelet announces
// nothing without an API server) until cond holds, or ctx ends.
func (r *Rig) WaitPod(ctx context.Context, name string, cond func(PodStatus, bool) bool) (PodStatus, error) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		st, ok, err := r.Pod(ctx, name)
		if err == nil && cond(st, ok) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("kuberig: pod %s: %w (last status %+v, %v)", name, ctx.Err(), st, err)
		case <-t.C:
		}
	}
}

// crictl runs crictl against the rig's containerd.
func (r *Rig) crictl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.tools.Crictl, append([]string{"--config", r.crictlConfig()}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kuberig: crictl %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// Exec runs a command in a running container of the pod (crictl exec) and
// returns its output; a non-zero exit is an error.
func (r *Rig) Exec(ctx context.Context, pod, container string, argv ...string) (string, error) {
	st, ok, err := r.Pod(ctx, pod)
	if err != nil {
		return "", err
	}
	c, found := st.Container(container)
	if !ok || !found || c.ContainerID == "" {
		return "", fmt.Errorf("kuberig: no container %s in pod %s", container, pod)
	}
	id := strings.TrimPrefix(c.ContainerID, "containerd://")
	cmd := exec.CommandContext(ctx, r.tools.Crictl, append([]string{"--config", r.crictlConfig(), "exec", id}, argv...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kuberig: crictl exec %s: %w: %s", strings.Join(argv, " "), err, out)
	}
	return string(out), nil
}

// removeAllPods removes every manifest and waits (up to 3 minutes) until
// the kubelet has stopped every container.
func (r *Rig) removeAllPods() error {
	ents, _ := os.ReadDir(filepath.Join(r.dir, "manifests"))
	for _, e := range ents {
		os.Remove(filepath.Join(r.dir, "manifests", e.Name()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return waitFor(ctx, "every container to stop", func() bool {
		out, err := r.crictl(ctx, "ps", "-q")
		return err == nil && strings.TrimSpace(out) == ""
	})
}

// Events returns the starts and exits of pod's containers so far.
func (r *Rig) Events(pod string) []TaskEvent { return r.events.Events(pod) }

// WaitEvents blocks until cond holds for pod's container events.
func (r *Rig) WaitEvents(ctx context.Context, pod string, cond func([]TaskEvent) bool) ([]TaskEvent, error) {
	return r.events.Wait(ctx, pod, cond)
}

// WaitSandboxGone blocks until the static pod's sandbox no longer runs
// (the kubelet stops it after forgetting the pod), or ctx ends.
func (r *Rig) WaitSandboxGone(ctx context.Context, pod string) error {
	return waitFor(ctx, "pod "+pod+"'s sandbox to stop", func() bool {
		out, err := r.crictl(ctx, "pods", "--name", "^"+pod+"-"+nodeName+"$", "--state", "ready", "-q")
		return err == nil && strings.TrimSpace(out) == ""
	})
}
