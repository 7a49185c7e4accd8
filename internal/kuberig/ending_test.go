package kuberig

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ending is a pod's deletion as the kubelet and containerd saw it.
type ending struct {
	began      time.Time               // the kubelet's first kill of one of its containers
	preStop    map[string][2]time.Time // by container: its hook's start and end
	hookFailed map[string]string       // by container: the kubelet's error for a failed hook
	exits      map[string]TaskEvent    // by container: its last exit
	grace      int                     // terminationGracePeriodSeconds
}

// deletePod deletes the pod and waits until every container in want has
// exited and the kubelet has forgotten the pod, then reads the ending.
func deletePod(t *testing.T, e *env, pod string, grace int, want ...string) ending {
	t.Helper()
	if err := e.rig.Delete(pod); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, time.Duration(grace+30)*time.Second)
	defer cancel()
	since := len(e.rig.Events(pod))
	evs, err := e.rig.WaitEvents(ctx, pod, func(evs []TaskEvent) bool {
		left := slices.Clone(want)
		for _, ev := range evs[min(since, len(evs)):] {
			if ev.Exit {
				left = slices.DeleteFunc(left, func(c string) bool { return c == ev.Container })
			}
		}
		return len(left) == 0
	})
	if err != nil {
		t.Fatalf("the containers did not all end: %v\n%+v", err, evs)
	}
	if _, err := e.rig.WaitPod(ctx, pod, func(_ PodStatus, ok bool) bool { return !ok }); err != nil {
		t.Fatal(err)
	}
	if err := e.rig.WaitSandboxGone(ctx, pod); err != nil {
		t.Fatal(err)
	}
	en := ending{preStop: map[string][2]time.Time{}, hookFailed: map[string]string{}, exits: map[string]TaskEvent{}, grace: grace}
	for _, ev := range evs[since:] {
		if ev.Exit {
			en.exits[ev.Container] = ev
		}
	}
	kevs, err := e.rig.KubeletEvents(pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kevs {
		c := k.Fields["containerName"]
		h := en.preStop[c]
		switch k.Msg {
		case "Killing container with a grace period override":
			if en.began.IsZero() {
				en.began = k.Time
			}
		case "Running preStop hook":
			h[0] = k.Time
		case "PreStop hook completed":
			h[1] = k.Time
		case "PreStop hook failed":
			en.hookFailed[c] = k.Fields["err"]
		}
		en.preStop[c] = h
	}
	return en
}

// report logs each container's preStop duration, exit and its time after
// the kubelet's first kill, and the grace used; it fails a container that
// did not end within the grace period.
func (en ending) report(t *testing.T) {
	t.Helper()
	last := time.Duration(0)
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for c := range en.exits {
			if !yield(c) {
				return
			}
		}
	}) {
		ex := en.exits[c]
		h := en.preStop[c]
		after := ex.Time.Sub(en.began)
		last = max(last, after)
		hook := "no preStop"
		if !h[0].IsZero() && !h[1].IsZero() {
			hook = fmt.Sprintf("preStop %.2fs", h[1].Sub(h[0]).Seconds())
		}
		if why, ok := en.hookFailed[c]; ok {
			hook += " (failed: " + why + ")"
		}
		t.Logf("%s: %s, exit %d at %.2fs", c, hook, ex.Status, after.Seconds())
		if after >= time.Duration(en.grace)*time.Second {
			t.Errorf("%s ended %.2fs after the kill began, past the grace period of %ds", c, after.Seconds(), en.grace)
		}
	}
	t.Logf("grace used: %.2fs of %ds", last.Seconds(), en.grace)
}

// record is one line the scenario's scripts appended to /shared/record:
// who, what (the words between) and when (seconds since boot).
type record struct {
	who, what string
	at        float64
}

// records reads /shared/record.
func records(t *testing.T, sharedDir string) []record {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedDir, "record"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		at, _ := strconv.ParseFloat(f[len(f)-1], 64)
		out = append(out, record{who: f[0], what: strings.Join(f[1:len(f)-1], " "), at: at})
	}
	return out
}

// find returns the first record of who whose what starts with prefix.
func find(rs []record, who, prefix string) (record, bool) {
	for _, r := range rs {
		if r.who == who && strings.HasPrefix(r.what, prefix) {
			return r, true
		}
	}
	return record{}, false
}

// count counts the records of who whose what starts with prefix.
func count(rs []record, who, prefix string) int {
	n := 0
	for _, r := range rs {
		if r.who == who && strings.HasPrefix(r.what, prefix) {
			n++
		}
	}
	return n
}

// recPrelude is the shell function the scenarios' scripts record with.
func recPrelude(who string) string {
	return "rec() { echo \"" + who + " $* $(cut -d' ' -f1 /proc/uptime)\" >> /shared/record; }\n"
}

// stepAt finds "STEP UPTIME" in a container's output (what the stand-ins
// print) and returns the uptime.
func stepAt(out, step string) (float64, bool) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == step {
				if v, err := strconv.ParseFloat(f[i+1], 64); err == nil {
					return v, true
				}
			}
		}
	}
	return 0, false
}

// nothingLeft fails when a process still runs in a cgroup below the
// kubelet's cgroup root: a pod that is gone leaves nothing behind.
func nothingLeft(t *testing.T) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err == nil && strings.Contains(string(b), "/"+cgroupRoot+"/kubepods") {
			cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			t.Errorf("pid %s still runs in a pod's cgroup: %s", e.Name(), strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
}

// uptime is this machine's seconds since boot, the clock the scripts
// record with.
func uptime(t *testing.T) float64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}

// hostProc is a process of a container, seen from the host.
type hostProc struct {
	pid    int
	uid    int
	args   string
	memcg  string // its memory cgroup's directory
	nspids string // its NSpid line: the host's pid, then the container's
}

// containerProcs lists the host's processes in the cgroups of the
// container (its own and those below, which vigil makes).
func containerProcs(t *testing.T, e *env, pod, container string) []hostProc {
	t.Helper()
	st, ok, err := e.rig.Pod(e.ctx, pod)
	c, found := st.Container(container)
	if err != nil || !ok || !found {
		t.Fatalf("no container %s in pod %s: %v", container, pod, err)
	}
	id := strings.TrimPrefix(c.ContainerID, "containerd://")
	var out []hostProc
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cgroup"))
		if err != nil || !strings.Contains(string(b), "/"+id) {
			continue
		}
		p := hostProc{pid: pid}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[1] == "memory" {
				p.memcg = filepath.Join("/sys/fs/cgroup/memory", f[2])
			}
		}
		status, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				p.uid, _ = strconv.Atoi(strings.Fields(v)[1])
			}
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				p.nspids = strings.TrimSpace(v)
			}
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		p.args = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		out = append(out, p)
	}
	return out
}

// procRunning returns the container's process whose command line holds
// args.
func procRunning(t *testing.T, e *env, pod, container, args string) hostProc {
	t.Helper()
	for _, p := range containerProcs(t, e, pod, container) {
		if strings.Contains(p.args, args) {
			return p
		}
	}
	t.Fatalf("no process %q in %s/%s", args, pod, container)
	return hostProc{}
}

// memoryLimit is a memory cgroup's limit in bytes.
func memoryLimit(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "memory.limit_in_bytes"))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

// killPid sends SIGKILL to a host process.
func killPid(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// applyPod puts the pod's manifest in place. Should the test end with it
// still there (a failure before its deletion), the cleanup removes it and
// waits, within the grace and a margin, until the kubelet has torn the
// pod down: a failed scenario leaves no container for the next one's
// census of what runs.
func applyPod(t *testing.T, e *env, pod string, manifest []byte, grace int) {
	t.Helper()
	if err := e.rig.Apply(pod, manifest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.rig.Delete(pod); err != nil {
			return // deleted by the scenario (or never there)
		}
		ctx, cancel := context.WithTimeout(e.ctx, time.Duration(grace+30)*time.Second)
		defer cancel()
		if _, err := e.rig.WaitPod(ctx, pod, func(_ PodStatus, ok bool) bool { return !ok }); err != nil {
			t.Errorf("the pod left behind by a failure: %v", err)
		}
		if err := e.rig.WaitSandboxGone(ctx, pod); err != nil {
			t.Errorf("the pod left behind by a failure: %v", err)
		}
	})
}
