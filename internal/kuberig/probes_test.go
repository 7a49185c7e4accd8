package kuberig

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// probes: HTTP and exec readiness and liveness through the kubelet, with
// its default timeouts (1 s). A process vigil restarts by itself never
// makes the kubelet restart its container; a vigil that does not answer
// fails the exec probe with vigil's own words within the timeout (not the
// kubelet's kill of the probe), and readiness comes back once it answers.
func probes(t *testing.T, e *env) {
	sh := shared(t, e)
	for _, name := range []string{"http", "exec"} {
		image(t, e, boshRoot(t, e, "probes-"+name, drainJob(name, "echo 0\n")), "localhost/kuberig/probes-"+name+":1")
	}
	httpC := vigilContainer("http", "localhost/kuberig/probes-http:1", 30, 8081, privileged())
	execC := vigilContainer("exec", "localhost/kuberig/probes-exec:1", 30, 8082, privileged())
	vigilProbe := func(what string) map[string]any {
		return map[string]any{"command": []string{"/usr/local/bin/vigil", "probe", what, "--root", "/var/vcap"}}
	}
	execC["readinessProbe"] = map[string]any{"exec": vigilProbe("ready"), "periodSeconds": 1}
	execC["livenessProbe"] = map[string]any{"exec": vigilProbe("live"), "periodSeconds": 5}
	logs := e.rig.FollowLogs("probes")
	defer logs.Stop()
	applyPod(t, e, "probes", manifest(t, podOf("probes", 30, sh, httpC, execC)), 30)
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	ready := func(st PodStatus, ok bool) bool { return ok && len(st.Containers) == 2 && st.Ready() }
	if _, err := e.rig.WaitPod(ctx, "probes", ready); err != nil {
		t.Fatal(err)
	}
	// Each job's process killed three times: vigil restarts it each time.
	for _, c := range []string{"http", "exec"} {
		for i := 1; i <= 3; i++ {
			p := procRunning(t, e, "probes", c, "/var/vcap/jobs/"+c+"/bin/"+c)
			if err := killPid(p.pid); err != nil {
				t.Fatal(err)
			}
			if err := waitFor(ctx, "the restart", func() bool {
				return strings.Count(logs.Container(c), c+"/"+c+" | started") == i+1
			}); err != nil {
				t.Fatalf("%v:\n%s", err, logs.Container(c))
			}
		}
	}
	// vigil's daemon in the exec container stops answering until the
	// kubelet has seen its readiness probe fail.
	var daemon hostProc
	for _, p := range containerProcs(t, e, "probes", "exec") {
		if f := strings.Fields(p.nspids); len(f) == 2 && f[1] != "1" && strings.Contains(p.args, "vigil container") {
			daemon = p
		}
	}
	if daemon.pid == 0 {
		t.Fatal("no vigil daemon in the exec container")
	}
	stopped := time.Now()
	if err := syscall.Kill(daemon.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var failed KubeletEvent
	err := waitFor(ctx, "a failed readiness probe", func() bool {
		evs, _ := e.rig.KubeletEvents("probes")
		for _, ev := range evs {
			if ev.Msg == "Probe failed" && ev.Fields["containerName"] == "exec" && ev.Fields["probeType"] == "Readiness" && ev.Time.After(stopped) {
				failed = ev
				return true
			}
		}
		return false
	})
	syscall.Kill(daemon.pid, syscall.SIGCONT)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("with vigil stopped, the kubelet's exec readiness probe failed: %q", failed.Fields["output"])
	if !strings.HasPrefix(failed.Fields["output"], "vigil: not ready: ") {
		t.Errorf("the exec probe's failure is not vigil's answer: %+v", failed.Fields)
	}
	st, err := e.rig.WaitPod(ctx, "probes", ready)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Containers {
		if c.RestartCount != 0 {
			t.Errorf("the kubelet restarted %s: %+v", c.Name, c)
		}
	}
	en := deletePod(t, e, "probes", 30, "http", "exec")
	en.report(t)
	for _, c := range []string{"http", "exec"} {
		if en.exits[c].Status != 0 {
			t.Errorf("%s exited %d", c, en.exits[c].Status)
		}
	}
	nothingLeft(t)
}
