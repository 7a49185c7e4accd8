package kuberig

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// loop is a job process that records its start and the signals it gets
// on its console (the container's log) and ends on TERM, after pause
// seconds.
func loop(pause string) string {
	return `#!/bin/sh
up() { cut -d' ' -f1 /proc/uptime; }
trap 'echo "got-QUIT $(up)"' QUIT
trap 'echo "got-TERM $(up)"; sleep ` + pause + `; echo "exit $(up)"; exit 0' TERM
echo "started $(up)"
while :; do sleep 1 & wait $!; done
`
}

// bpmYML is a bpm.yml of processes, each running jobs/JOB/bin/PROC (or a
// command given as "PROC=EXECUTABLE ARGS...").
func bpmYML(job string, procs ...string) string {
	var b strings.Builder
	b.WriteString("processes:\n")
	for _, p := range procs {
		name, cmd, found := strings.Cut(p, "=")
		if !found {
			cmd = "/var/vcap/jobs/" + job + "/bin/" + name
		}
		exe, args, _ := strings.Cut(cmd, " ")
		b.WriteString("- name: " + name + "\n  executable: " + exe + "\n")
		if args != "" {
			b.WriteString("  args:\n")
			for _, a := range strings.Fields(args) {
				b.WriteString(fmt.Sprintf("  - %q\n", a))
			}
		}
	}
	return b.String()
}

// kubecfJobs are stand-ins for the five jobs of the KubeCF report, each
// drain keeping its release's logic, and a job whose drain calls bpm's
// term, quit and running as container-run's users did.
func kubecfJobs() []job {
	standin := "/var/vcap/packages/standin/bin/standin"
	return []job{
		{name: "gorouter", files: map[string]string{
			"config/bpm.yml": bpmYML("gorouter", "gorouter="+standin+" serve :8080"),
			// routing-release: USR1 to the pid in bpm's pid file, then
			// -5 while the process drains, 0 once it is gone.
			"bin/drain": "#!/bin/sh\n" + recPrelude("gorouter") + `rec "drain $1"
pidfile=/var/vcap/sys/run/bpm/gorouter/gorouter.pid
if [ ! -f "$pidfile" ]; then rec drained no-pidfile; echo 0; exit 0; fi
pid=$(cat "$pidfile")
if [ "$1" = job_check_status ]; then
  if kill -0 "$pid" 2>/dev/null; then echo -5; else rm -f "$pidfile"; rec drained; echo 0; fi
  exit 0
fi
if ! kill -USR1 "$pid"; then rm -f "$pidfile"; rec kill-failed; echo 0; exit 0; fi
rec usr1-sent
echo -5
`}},
		{name: "rep", files: map[string]string{
			"config/bpm.yml": bpmYML("rep", "rep="+standin+" evacuate"),
			// diego-release with bpm.enabled: the pid from bpm pid rep,
			// evacuation, then the wait for the process to go.
			"bin/drain": "#!/bin/sh\n" + recPrelude("rep") + `rec "drain $1"
pid=$(/var/vcap/jobs/bpm/bin/bpm pid rep) || { rec no-pid; echo 0; exit 0; }
rec "bpm-pid $pid"
kill -USR1 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
rec evacuated
echo 0
`}},
		{name: "auctioneer", files: map[string]string{
			"config/bpm.yml": bpmYML("auctioneer", "auctioneer"),
			"bin/auctioneer": loop("0"),
			"bin/drain": "#!/bin/sh\n" + recPrelude("auctioneer") + `rec "drain $1"
if /var/vcap/jobs/bpm/bin/bpm stop auctioneer; then rec stopped; else rec "stop-failed $?"; fi
echo 0
`}},
		{name: "cloud_controller_ng", files: map[string]string{
			"config/bpm.yml":          bpmYML("cloud_controller_ng", "cloud_controller_ng", "local_worker_1", "local_worker_2", "nginx"),
			"bin/cloud_controller_ng": loop("0"),
			"bin/local_worker_1":      loop("1"),
			"bin/local_worker_2":      loop("1"),
			"bin/nginx": `#!/bin/sh
up() { cut -d' ' -f1 /proc/uptime; }
trap 'echo "got-QUIT $(up)"; exit 0' QUIT
trap 'echo "got-TERM $(up)"; exit 0' TERM
echo "started $(up)"
while :; do sleep 1 & wait $!; done
`,
			// capi-release: each local worker stopped through bpm, one
			// after the other, then the shutdown drain.
			"bin/drain": "#!/bin/sh\n" + recPrelude("cloud_controller_ng") + `rec "drain $1"
for i in 1 2; do
  if /var/vcap/jobs/bpm/bin/bpm stop cloud_controller_ng -p "local_worker_$i"; then rec "stopped local_worker_$i"; fi
done
/var/vcap/jobs/cloud_controller_ng/bin/shutdown_drain 1>&2
rec shutdown-drained
echo 0
`,
			// The stand-in of capi's shutdown_drain (ruby): nginx first,
			// with QUIT (it finishes its requests), then the cloud
			// controller, each waited for.
			"bin/shutdown_drain": "#!/bin/sh\n" + recPrelude("cloud_controller_ng") + `run=/var/vcap/sys/run/bpm/cloud_controller_ng
for p in nginx:QUIT cloud_controller_ng:TERM; do
  name=${p%%:*}
  pid=$(cat "$run/$name.pid") || continue
  kill -"${p##*:}" "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  rec "$name-gone"
done
`}},
		{name: "cloud_controller_worker", files: map[string]string{
			"config/bpm.yml":                bpmYML("cloud_controller_worker", "cloud_controller_worker_1", "cloud_controller_worker_2"),
			"bin/cloud_controller_worker_1": loop("0"),
			"bin/cloud_controller_worker_2": loop("0"),
			"bin/drain": "#!/bin/sh\n" + recPrelude("cloud_controller_worker") + `rec "drain $1"
for i in 1 2; do
  if /var/vcap/jobs/bpm/bin/bpm stop cloud_controller_worker -p "cloud_controller_worker_$i"; then rec "stopped cloud_controller_worker_$i"; fi
done
echo 0
`}},
		{name: "legacy", files: map[string]string{
			"config/bpm.yml": bpmYML("legacy", "legacy"),
			"bin/legacy":     loop("0"),
			// container-run's bpm: running, quit, term.
			"bin/drain": "#!/bin/sh\n" + recPrelude("legacy") + `rec "drain $1"
bpm=/var/vcap/jobs/bpm/bin/bpm
if $bpm running legacy >/dev/null; then rec running-yes; fi
if $bpm quit legacy; then rec quit-sent; fi
if $bpm term legacy; then rec term-sent; fi
while $bpm running legacy >/dev/null; do sleep 0.2; done
rec not-running
echo 0
`}},
	}
}

// exampleSecurity is examples/kubernetes/pod.yaml's securityContext: what
// bpm's sandbox needs, without privileged: true.
func exampleSecurity() map[string]any {
	return map[string]any{"runAsUser": 0, "capabilities": map[string]any{"add": []string{"SYS_ADMIN"}},
		"seccompProfile": map[string]any{"type": "Unconfined"}, "appArmorProfile": map[string]any{"type": "Unconfined"}}
}

// kubecf runs the KubeCF report's pod: one container per job, vigil as
// each one's PID 1 and vigil drain --wait-all as each preStop hook, wired
// as examples/kubernetes/pod.yaml is. It deletes the pod while a long
// request is in flight through gorouter, and checks that every drain ran
// once with its release's logic, the request succeeded, every container
// exited 0 within the grace period, and nothing is left.
func kubecf(t *testing.T, e *env) {
	const grace = 60
	sh := shared(t, e)
	var containers []map[string]any
	var names []string
	for i, j := range kubecfJobs() {
		name := strings.ReplaceAll(j.name, "_", "-")
		ref := "localhost/kuberig/kubecf-" + name + ":1"
		image(t, e, boshRoot(t, e, name, j), ref)
		containers = append(containers, vigilContainer(name, ref, grace, 8081+i, exampleSecurity()))
		names = append(names, name)
	}
	logs := e.rig.FollowLogs("kubecf")
	defer logs.Stop()
	applyPod(t, e, "kubecf", manifest(t, podOf("kubecf", grace, sh, containers...)), grace)
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	st, err := e.rig.WaitPod(ctx, "kubecf", func(st PodStatus, ok bool) bool { return ok && st.Ready() && len(st.Containers) == len(names) })
	if err != nil {
		t.Fatal(err)
	}
	// A request that takes 8 s, in flight when the pod is deleted.
	type answer struct {
		status int
		body   string
		err    error
		took   time.Duration
	}
	answered := make(chan answer, 1)
	sent := time.Now()
	go func() {
		resp, err := http.Get("http://" + st.PodIP + ":8080/slow?s=8")
		a := answer{err: err}
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			a.status, a.body = resp.StatusCode, string(b)
		}
		a.took = time.Since(sent)
		answered <- a
	}()
	if err := waitFor(ctx, "the request in flight", func() bool { return strings.Contains(logs.Container("gorouter"), "request-began") }); err != nil {
		select {
		case a := <-answered:
			t.Logf("answer: %+v", a)
		default:
		}
		t.Fatalf("%v\ngorouter's output:\n%s", err, logs.Container("gorouter"))
	}
	deleted := uptime(t)
	en := deletePod(t, e, "kubecf", grace, names...)
	en.report(t)
	a := <-answered
	t.Logf("request in flight: %d %q after %s (%v)", a.status, strings.TrimSpace(a.body), a.took.Round(10*time.Millisecond), a.err)
	if a.err != nil || a.status != http.StatusOK || strings.TrimSpace(a.body) != "done" {
		t.Errorf("the request in flight through gorouter: %d %q %v", a.status, a.body, a.err)
	}
	for _, c := range names {
		if ex, ok := en.exits[c]; !ok || ex.Status != 0 {
			t.Errorf("%s: exit %+v (recorded: %v)", c, ex, ok)
		}
		if _, failed := en.hookFailed[c]; failed || en.preStop[c][1].IsZero() {
			t.Errorf("%s: preStop %v, failed %q", c, en.preStop[c], en.hookFailed[c])
		}
	}
	rs := records(t, sh)
	for _, j := range kubecfJobs() {
		if n := count(rs, j.name, "drain job_shutdown"); n != 1 {
			t.Errorf("%s: drained %d times", j.name, n)
		}
	}
	checkKubecfDrains(t, rs, logs, deleted)
	nothingLeft(t)
}

// checkKubecfDrains checks each drain's own steps, in their order.
func checkKubecfDrains(t *testing.T, rs []record, logs *PodLogs, deleted float64) {
	t.Helper()
	in := func(who string, steps ...string) {
		t.Helper()
		last := deleted
		for _, s := range steps {
			r, ok := find(rs, who, s)
			if !ok || r.at < last {
				t.Errorf("%s: %q missing or out of order (%+v)", who, s, r)
				return
			}
			last = r.at
		}
	}
	in("gorouter", "drain job_shutdown", "usr1-sent", "drain job_check_status", "drained")
	in("rep", "drain job_shutdown", "bpm-pid ", "evacuated")
	in("auctioneer", "drain job_shutdown", "stopped")
	in("cloud_controller_ng", "drain job_shutdown", "stopped local_worker_1", "stopped local_worker_2", "nginx-gone",
		"cloud_controller_ng-gone", "shutdown-drained")
	in("cloud_controller_worker", "drain job_shutdown", "stopped cloud_controller_worker_1", "stopped cloud_controller_worker_2")
	in("legacy", "drain job_shutdown", "running-yes", "quit-sent", "term-sent", "not-running")
	gr := logs.Container("gorouter")
	began, _ := stepAt(gr, "request-began")
	ended, okEnd := stepAt(gr, "request-ended")
	usr1, okUSR1 := stepAt(gr, "got-USR1")
	if drained, _ := find(rs, "gorouter", "drained"); !okEnd || !okUSR1 || !(began < usr1 && usr1 < ended && ended <= drained.at) {
		t.Errorf("gorouter: request %.2f-%.2f, USR1 %.2f, drained %.2f:\n%s", began, ended, usr1, drained.at, gr)
	}
	if r, _ := find(rs, "rep", "bpm-pid "); len(strings.Fields(r.what)) != 2 {
		t.Errorf("rep: bpm pid rep said %q", r.what)
	}
	if out := logs.Container("rep"); !strings.Contains(out, "evacuating") {
		t.Errorf("rep did not evacuate:\n%s", out)
	}
	// The workers one after the other: the second gets TERM only once
	// the first has exited.
	cc := logs.Container("cloud-controller-ng")
	w1, ok1 := stepAt(procLines(cc, "cloud_controller_ng/local_worker_1"), "exit")
	w2, ok2 := stepAt(procLines(cc, "cloud_controller_ng/local_worker_2"), "got-TERM")
	if !ok1 || !ok2 || w2 < w1 {
		t.Errorf("cloud_controller_ng: local_worker_1 exited at %.2f, local_worker_2 got TERM at %.2f:\n%s", w1, w2, cc)
	}
	if out := logs.Container("legacy"); !strings.Contains(out, "got-QUIT") || !strings.Contains(out, "got-TERM") {
		t.Errorf("legacy's output:\n%s", out)
	}
}

// procLines keeps the lines of a container's output that one process
// wrote (vigil --console prefixes each with JOB/PROC).
func procLines(out, proc string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, proc+" | "); ok {
			b.WriteString(rest + "\n")
		}
	}
	return b.String()
}
