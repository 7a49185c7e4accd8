package kuberig

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/ociimage"
)

// exampleImages builds examples/kubernetes's two images with vigil image,
// as its README says, once per run.
func exampleImages(t *testing.T, e *env) {
	t.Helper()
	if e.exampleBuilt {
		return
	}
	dir := filepath.Join(moduleRoot(t), "examples", "kubernetes")
	for _, name := range []string{"gorouter", "route-registrar"} {
		if err := e.rig.VigilImage(e.ctx, e.vigil, e.inside, filepath.Join(dir, name), e.base, "localhost/vigil-example/"+name+":1"); err != nil {
			t.Fatal(err)
		}
	}
	e.exampleBuilt = true
}

// runExample runs one of examples/kubernetes's pods as the file says, with
// its images built by vigil image: both containers become ready, each job
// runs as check says, and the deletion drains each job once, every
// container exiting 0 within the grace period with nothing left. It
// returns the containers' output.
func runExample(t *testing.T, e *env, file, pod string, check func(t *testing.T, logs *PodLogs)) {
	exampleImages(t, e)
	raw, err := os.ReadFile(filepath.Join(moduleRoot(t), "examples", "kubernetes", file))
	if err != nil {
		t.Fatal(err)
	}
	logs := e.rig.FollowLogs(pod)
	defer logs.Stop()
	applyPod(t, e, pod, raw, 120)
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	if _, err := e.rig.WaitPod(ctx, pod, func(st PodStatus, ok bool) bool { return ok && st.Ready() && len(st.Containers) == 2 }); err != nil {
		t.Fatalf("%v\ngorouter:\n%s\nroute-registrar:\n%s", err, logs.Container("gorouter"), logs.Container("route-registrar"))
	}
	check(t, logs)
	en := deletePod(t, e, pod, 120, "gorouter", "route-registrar")
	en.report(t)
	for c, job := range map[string]string{"gorouter": "gorouter", "route-registrar": "route_registrar"} {
		out := logs.Container(c)
		if ex := en.exits[c]; ex.Status != 0 || en.preStop[c][1].IsZero() || en.hookFailed[c] != "" {
			t.Errorf("%s: exit %d, preStop %v %q:\n%s", c, ex.Status, en.preStop[c], en.hookFailed[c], out)
		}
		if n := strings.Count(out, `msg="drain done" job=`+job+" "); n != 1 {
			t.Errorf("%s: drained %d times:\n%s", c, n, out)
		}
		if n := strings.Count(out, `msg="isolation not enforced"`); n > 1 {
			t.Errorf("%s: warned %d times:\n%s", c, n, out)
		}
	}
	nothingLeft(t)
}

// example: examples/kubernetes/pod.yaml as written (root, SYS_ADMIN,
// unconfined profiles, not privileged). On this cgroup v1 host the
// container's cgroup hierarchies are read-only: vigil says so once and
// runs the jobs in bpm's sandbox otherwise (as vcap, in a PID namespace of
// their own), in the container's cgroup.
func example(t *testing.T, e *env) {
	runExample(t, e, "pod.yaml", "router-0", func(t *testing.T, logs *PodLogs) {
		out := logs.Container("gorouter")
		if !strings.Contains(out, "are read-only (a container's own cgroup): every process stays in vigil's cgroup") {
			t.Errorf("gorouter said nothing of its read-only cgroups:\n%s", out)
		}
		p := procRunning(t, e, "router-0", "gorouter", "/var/vcap/jobs/gorouter/bin/gorouter")
		if p.uid != ociimage.VcapUID || len(strings.Fields(p.nspids)) < 3 {
			t.Errorf("gorouter's process: uid %d, pids %q (want vcap, in a PID namespace below the container's)", p.uid, p.nspids)
		}
		t.Logf("gorouter runs as uid %d, pids %s, cgroup %s", p.uid, p.nspids, p.memcg)
	})
}

// restricted: examples/kubernetes/pod-restricted.yaml (the restricted Pod
// Security level, and a read-only root filesystem): the jobs run as the
// pod's user, vigil says once what it cannot enforce, and the pod's
// memory limits are the processes'.
func restricted(t *testing.T, e *env) {
	runExample(t, e, "pod-restricted.yaml", "router-restricted-0", func(t *testing.T, logs *PodLogs) {
		out := logs.Container("gorouter")
		if n := strings.Count(out, "vigil runs as uid 1000, not root: every process runs as that user"); n != 1 {
			t.Errorf("gorouter said %d times that it is not root:\n%s", n, out)
		}
		for c, limit := range map[string]int64{"gorouter": 256 << 20, "route-registrar": 128 << 20} {
			job := map[string]string{"gorouter": "gorouter", "route-registrar": "route_registrar"}[c]
			p := procRunning(t, e, "router-restricted-0", c, "/var/vcap/jobs/"+job+"/bin/"+job)
			if got := memoryLimit(t, p.memcg); p.uid != 1000 || got != limit {
				t.Errorf("%s's process: uid %d, memory limit %d (want the pod's %d)", c, p.uid, got, limit)
			}
			t.Logf("%s runs as uid %d in %s, limit %d", c, p.uid, p.memcg, limit)
		}
	})
}

// limitedJob is a job whose process records its identity and which asks
// bpm.yml for a memory limit of 64 MiB.
func limitedJob() job {
	return job{name: "limited", files: map[string]string{
		"config/bpm.yml": "processes:\n- name: limited\n  executable: /var/vcap/jobs/limited/bin/limited\n  limits:\n    memory: 64M\n",
		"bin/limited":    loop("0"),
		"bin/drain":      "#!/bin/sh\n" + recPrelude("limited") + "rec \"drain $1\"\necho 0\n",
	}}
}

// onePod runs a pod of one vigil container with security on image, waits
// until it is ready and hands it to check, then deletes it: the drain
// runs once, the container exits 0 within the grace period, nothing is
// left.
func onePod(t *testing.T, e *env, pod, image string, security map[string]any, resources map[string]any,
	check func(t *testing.T, logs *PodLogs)) {
	t.Helper()
	sh := shared(t, e)
	c := vigilContainer("job", image, 30, 8081, security)
	if resources != nil {
		c["resources"] = resources
	}
	logs := e.rig.FollowLogs(pod)
	defer logs.Stop()
	applyPod(t, e, pod, manifest(t, podOf(pod, 30, sh, c)), 30)
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	if _, err := e.rig.WaitPod(ctx, pod, func(st PodStatus, ok bool) bool { return ok && st.Ready() }); err != nil {
		t.Fatalf("%v\n%s", err, logs.Container("job"))
	}
	check(t, logs)
	en := deletePod(t, e, pod, 30, "job")
	en.report(t)
	if ex := en.exits["job"]; ex.Status != 0 || count(records(t, sh), "limited", "drain job_shutdown") != 1 {
		t.Errorf("exit %d, drains %+v:\n%s", ex.Status, records(t, sh), logs.Container("job"))
	}
	nothingLeft(t)
}

// baseline: root without added capabilities (the baseline Pod Security
// level, RuntimeDefault seccomp): vigil says once that it lacks
// CAP_SYS_ADMIN, the job runs as root in the container, under the pod's
// limit (bpm.yml's 64M cannot be enforced).
func baseline(t *testing.T, e *env) {
	image(t, e, boshRoot(t, e, "limited", limitedJob()), "localhost/kuberig/limited:1")
	security := map[string]any{"runAsUser": 0, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	resources := map[string]any{"limits": map[string]any{"memory": "200Mi"}}
	onePod(t, e, "baseline", "localhost/kuberig/limited:1", security, resources, func(t *testing.T, logs *PodLogs) {
		out := logs.Container("job")
		if n := strings.Count(out, "vigil lacks CAP_SYS_ADMIN: every process runs as root"); n != 1 {
			t.Errorf("said %d times that it lacks CAP_SYS_ADMIN:\n%s", n, out)
		}
		p := procRunning(t, e, "baseline", "job", "/var/vcap/jobs/limited/bin/limited")
		if got := memoryLimit(t, p.memcg); p.uid != 0 || got != 200<<20 {
			t.Errorf("the process: uid %d, memory limit %d (want root, the pod's 200Mi)", p.uid, got)
		}
		t.Logf("the job runs as uid %d in %s, limit %d", p.uid, p.memcg, memoryLimit(t, p.memcg))
	})
}

// privileged: privileged: true keeps bpm's whole isolation: the process
// runs as vcap in PID namespaces of its own, in a cgroup vigil made below
// the container's, with bpm.yml's 64M as its limit; vigil says nothing of
// its environment.
func privilegedPod(t *testing.T, e *env) {
	image(t, e, boshRoot(t, e, "limited", limitedJob()), "localhost/kuberig/limited:1")
	onePod(t, e, "privileged", "localhost/kuberig/limited:1", privileged(), nil, func(t *testing.T, logs *PodLogs) {
		out := logs.Container("job")
		if strings.Contains(out, "msg=environment") {
			t.Errorf("a privileged container lacks something:\n%s", out)
		}
		p := procRunning(t, e, "privileged", "job", "/var/vcap/jobs/limited/bin/limited")
		if got := memoryLimit(t, p.memcg); p.uid != ociimage.VcapUID || got != 64<<20 || !strings.Contains(p.memcg, "/vigil/") ||
			len(strings.Fields(p.nspids)) < 3 {
			t.Errorf("the process: uid %d, pids %q, memory cgroup %s limited to %d (want vcap, its own PID namespace, vigil's group, 64M)",
				p.uid, p.nspids, p.memcg, got)
		}
		t.Logf("the job runs as uid %d, pids %s, in %s, limit %d", p.uid, p.nspids, p.memcg, memoryLimit(t, p.memcg))
	})
}

// noVcapImage writes and imports an image like vigil image's but whose
// /etc/passwd has no vcap user: the base's busybox files as they are.
func noVcapImage(t *testing.T, e *env, root, ref string) {
	t.Helper()
	dir := t.TempDir()
	var layers []ociimage.Layer
	for _, add := range []func(lw *ociimage.LayerWriter) error{
		func(lw *ociimage.LayerWriter) error { return lw.Tree(e.base, "", nil, nil) },
		func(lw *ociimage.LayerWriter) error {
			f, err := os.Open(e.vigil)
			if err != nil {
				return err
			}
			defer f.Close()
			fi, _ := f.Stat()
			if err := lw.File(ociimage.VigilPath, 0o755, 0, 0, fi.Size(), f); err != nil {
				return err
			}
			if err := lw.Mkdir("var/vcap", 0o755, 0, 0); err != nil {
				return err
			}
			return lw.Tree(root, "var/vcap", nil, nil)
		},
	} {
		lw, err := ociimage.NewLayer(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := add(lw); err != nil {
			t.Fatal(err)
		}
		l, err := lw.Close()
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	archive := filepath.Join(dir, "image.tar")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := ociimage.Write(f, ref, ociimage.Config{Env: []string{"PATH=/bin"}}, layers); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := e.rig.Import(e.ctx, archive); err != nil {
		t.Fatal(err)
	}
}

// badEnvironments: what a container lacks is said, once, with what to add,
// and never silently: an image without a vcap user (the job cannot start
// as vcap, as under bpm; the pod is never ready, and vigil said what to
// add), and a read-only root filesystem without volumes for /var/vcap/sys
// and /var/vcap/data (vigil cannot run: it says where to mount one).
func badEnvironments(t *testing.T, e *env) {
	sh := shared(t, e)
	root := boshRoot(t, e, "limited-novcap", limitedJob())
	noVcapImage(t, e, root, "localhost/kuberig/novcap:1")
	image(t, e, root, "localhost/kuberig/limited:1")
	for _, c := range []struct {
		pod, image string
		security   map[string]any
		said, then string // the warning, then what comes of it
	}{
		{"novcap", "localhost/kuberig/novcap:1", privileged(),
			"there is no user vcap, the identity of every process without a user: key: such processes cannot start; add it (/etc/passwd: vcap:x:1000:1000::/home/vcap:/bin/sh, /etc/group: vcap:x:1000:; vigil image adds both)",
			`state=backoff last_exit="failed to start: failed to start job-process: user vcap does not exist"`},
		{"readonly", "localhost/kuberig/limited:1", map[string]any{"privileged": true, "readOnlyRootFilesystem": true},
			"vigil cannot write /var/vcap/sys (read-only file system), /var/vcap/data (read-only file system): its socket, the jobs' logs and data go there (a read-only root filesystem? mount a writable volume, an emptyDir in a pod, at each)",
			"vigil: control socket: mkdir /var/vcap/sys/run: read-only file system"},
	} {
		t.Run(c.pod, func(t *testing.T) {
			logs := e.rig.FollowLogs(c.pod)
			defer logs.Stop()
			applyPod(t, e, c.pod, manifest(t, podOf(c.pod, 10, sh, vigilContainer("job", c.image, 10, 8081, c.security))), 10)
			ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
			defer cancel()
			if err := waitFor(ctx, "the warning", func() bool {
				out := logs.Container("job")
				i := strings.Index(out, c.said)
				return i >= 0 && strings.Contains(out[i+len(c.said):], c.then)
			}); err != nil {
				st, _, _ := e.rig.Pod(e.ctx, c.pod)
				ps, _ := e.rig.crictl(e.ctx, "ps", "-a")
				t.Fatalf("%v:\n%s\n%+v\n%s", err, logs.Container("job"), st, ps)
			}
			st, _, _ := e.rig.Pod(ctx, c.pod)
			t.Logf("%s: %+v\n%s", c.pod, st.Containers, logs.Container("job"))
			if st.Ready() {
				t.Errorf("%s is ready", c.pod)
			}
			if err := e.rig.Delete(c.pod); err != nil {
				t.Fatal(err)
			}
			if _, err := e.rig.WaitPod(ctx, c.pod, func(_ PodStatus, ok bool) bool { return !ok }); err != nil {
				t.Fatal(err)
			}
			if err := e.rig.WaitSandboxGone(ctx, c.pod); err != nil {
				t.Fatal(err)
			}
			nothingLeft(t)
		})
	}
}
