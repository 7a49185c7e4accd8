package kuberig

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// drainJob is a job with a process that loops and the drain given.
func drainJob(name, drain string) job {
	return job{name: name, files: map[string]string{
		"config/bpm.yml": bpmYML(name, name),
		"bin/" + name:    loop("0"),
		"bin/drain":      "#!/bin/sh\n" + recPrelude(name) + "rec \"drain $1\"\n" + drain,
	}}
}

// startPod builds an image per job, runs them as one pod, a container
// each (examples/kubernetes/pod.yaml's wiring, privileged), and waits
// until ready says so.
func startPod(t *testing.T, e *env, pod string, grace int, ready func(PodStatus) bool, jobs ...job) (*PodLogs, []string) {
	t.Helper()
	sh := shared(t, e)
	var containers []map[string]any
	var names []string
	for i, j := range jobs {
		ref := fmt.Sprintf("localhost/kuberig/%s-%s:1", pod, j.name)
		image(t, e, boshRoot(t, e, pod+"-"+j.name, j), ref)
		containers = append(containers, vigilContainer(j.name, ref, grace, 8081+i, privileged()))
		names = append(names, j.name)
	}
	logs := e.rig.FollowLogs(pod)
	applyPod(t, e, pod, manifest(t, podOf(pod, grace, sh, containers...)), grace)
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	if _, err := e.rig.WaitPod(ctx, pod, func(st PodStatus, ok bool) bool { return ok && len(st.Containers) == len(jobs) && ready(st) }); err != nil {
		t.Fatal(err)
	}
	return logs, names
}

// failingDrain (issue 39): one container's drain fails at once (it prints
// nothing and exits 1) beside one whose drain takes 5 s. The failing one
// must still wait for the pod: it ends no earlier than the slow one's
// drain, and both outcomes are reported: the kubelet's FailedPreStopHook
// with the agent's words and exit code 1 for the one, exit 0 for the
// other.
func failingDrain(t *testing.T, e *env) {
	const grace = 60
	logs, names := startPod(t, e, "failing", grace, PodStatus.Ready,
		drainJob("broken", "exit 1\n"),
		drainJob("slow", "sleep 5\nrec done\necho 0\n"))
	defer logs.Stop()
	en := deletePod(t, e, "failing", grace, names...)
	en.report(t)
	rs := records(t, shared(t, e))
	slowDone, _ := find(rs, "slow", "done")
	broken, slow := en.exits["broken"], en.exits["slow"]
	t.Logf("broken ended %.2fs after the kill began, slow %.2fs; slow's drain ended %.2fs in",
		broken.Time.Sub(en.began).Seconds(), slow.Time.Sub(en.began).Seconds(), slowDone.at-uptimeAt(t, en.began))
	if uptimeAt(t, broken.Time) < slowDone.at {
		t.Errorf("broken ended %.2fs before slow's drain did", slowDone.at-uptimeAt(t, broken.Time))
	}
	if broken.Status != 1 || slow.Status != 0 {
		t.Errorf("exits: broken %d, slow %d (want 1 and 0)", broken.Status, slow.Status)
	}
	if why := en.hookFailed["broken"]; !strings.Contains(why, `Script did not return a signed integer: printed \"\" (exit status 1)`) &&
		!strings.Contains(why, `Script did not return a signed integer: printed "" (exit status 1)`) {
		t.Errorf("broken's preStop failure: %q", why)
	}
	if _, failed := en.hookFailed["slow"]; failed {
		t.Errorf("slow's preStop failed: %q", en.hookFailed["slow"])
	}
	if out := logs.Container("broken"); !strings.Contains(out, `level=ERROR msg="drain failed" job=broken output="" exit="exit status 1"`) {
		t.Errorf("broken's log:\n%s", out)
	}
	nothingLeft(t)
}

// uptimeAt converts a wall-clock time to the machine's uptime, the
// scripts' clock.
func uptimeAt(t *testing.T, at time.Time) float64 {
	return uptime(t) - time.Since(at).Seconds()
}

// crashLoop: one container's job exits at once, again and again (vigil
// restarts it with its backoff; the container is never ready, never
// restarted by the kubelet); the other container is ready. On deletion
// the crashing one still drains and marks its stamp at once, so the
// other's preStop does not wait out the grace period.
func crashLoop(t *testing.T, e *env) {
	const grace = 60
	crasher := job{name: "crasher", files: map[string]string{
		"config/bpm.yml": bpmYML("crasher", "crasher"),
		"bin/crasher":    "#!/bin/sh\necho \"crash $(cut -d' ' -f1 /proc/uptime)\"\nexit 1\n",
		"bin/drain":      "#!/bin/sh\n" + recPrelude("crasher") + "rec \"drain $1\"\necho 0\n",
	}}
	logs, names := startPod(t, e, "crashloop", grace, func(st PodStatus) bool {
		c, _ := st.Container("crasher")
		s, _ := st.Container("steady")
		return s.Ready && strings.Contains(c.ContainerID, "://") && !c.Ready
	}, crasher, drainJob("steady", "echo 0\n"))
	defer logs.Stop()
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	// Three crashes and restarts, inside the container.
	if err := waitFor(ctx, "three crashes", func() bool { return strings.Count(logs.Container("crasher"), "| crash ") >= 3 }); err != nil {
		t.Fatalf("%v\n%s", err, logs.Container("crasher"))
	}
	st, _, _ := e.rig.Pod(ctx, "crashloop")
	if c, _ := st.Container("crasher"); c.RestartCount != 0 || c.Ready {
		t.Errorf("the crashing container: %+v", c)
	}
	en := deletePod(t, e, "crashloop", grace, names...)
	en.report(t)
	rs := records(t, shared(t, e))
	for _, c := range names {
		h := en.preStop[c]
		if d := h[1].Sub(h[0]); h[1].IsZero() || d > 10*time.Second {
			t.Errorf("%s's preStop took %s of the %ds grace", c, d, grace)
		}
		if n := count(rs, c, "drain job_shutdown"); n != 1 {
			t.Errorf("%s drained %d times", c, n)
		}
	}
	nothingLeft(t)
}

// vigilKilled: vigil, a container's PID 1, is killed outright; the kubelet
// restarts the container, vigil starts its job again, and the drain
// stamps in the pod's emptyDir still name both containers. On deletion
// each drain runs exactly once (none from the first life, none twice),
// and both containers exit 0.
func vigilKilled(t *testing.T, e *env) {
	const grace = 30
	logs, names := startPod(t, e, "killed", grace, PodStatus.Ready, drainJob("victim", "echo 0\n"), drainJob("peer", "echo 0\n"))
	defer logs.Stop()
	var reaper hostProc
	for _, p := range containerProcs(t, e, "killed", "victim") {
		if f := strings.Fields(p.nspids); len(f) == 2 && f[1] == "1" {
			reaper = p // the container's PID 1
		}
	}
	t.Logf("killing the victim's PID 1, host pid %d (%s)", reaper.pid, reaper.args)
	if err := killPid(reaper.pid); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	st, err := e.rig.WaitPod(ctx, "killed", func(st PodStatus, ok bool) bool {
		c, _ := st.Container("victim")
		return ok && c.RestartCount == 1 && st.Ready()
	})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := st.Container("victim")
	t.Logf("the victim restarted: %+v", c)
	if n := strings.Count(logs.Container("victim"), "victim/victim | started"); n != 2 {
		t.Errorf("the victim's job started %d times:\n%s", n, logs.Container("victim"))
	}
	en := deletePod(t, e, "killed", grace, names...)
	en.report(t)
	rs := records(t, shared(t, e))
	for _, c := range names {
		if n := count(rs, c, "drain job_shutdown"); n != 1 || en.exits[c].Status != 0 {
			t.Errorf("%s: drained %d times, exit %d", c, n, en.exits[c].Status)
		}
	}
	nothingLeft(t)
}
