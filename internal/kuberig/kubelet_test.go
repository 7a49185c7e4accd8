package kuberig

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var kubeFlag = flag.Bool("kube", false, "start containerd and a standalone kubelet and run the pod scenarios (README, Tests)")

// scenario is one pod scenario under the rig's kubelet.
type scenario struct {
	name string
	run  func(t *testing.T, e *env)
}

// env is what a scenario gets: the running rig and the binaries and base
// to build its images from.
type env struct {
	rig   *Rig
	vigil string // vigil, static, as README builds it
	// inside is the vigil the images hold when it is not vigil:
	// $VIGIL_KUBE_VIGIL, another build, to see a scenario fail on it.
	inside  string
	standin string // the stand-in job processes
	base    string // the images' root file system (busybox)
	scratch string // a directory the scenario may use (below the rig's)
	// exampleBuilt: examples/kubernetes's images are imported.
	exampleBuilt bool
	ctx          context.Context
}

// scenarios run in this order, each on the same rig.
func scenarios() []scenario {
	return []scenario{
		{"kubecf", kubecf},
		{"probes", probes},
		{"failing-drain", failingDrain},
		{"crash-loop", crashLoop},
		{"vigil-killed", vigilKilled},
		{"example", example},
		{"restricted", restricted},
		{"baseline", baseline},
		{"privileged", privilegedPod},
		{"bad-environments", badEnvironments},
	}
}

// selected are the scenarios whose names match $VIGIL_KUBE_ONLY (a regular
// expression; all of them without it).
func selected() []scenario {
	only := regexp.MustCompile(os.Getenv("VIGIL_KUBE_ONLY"))
	var out []scenario
	for _, s := range scenarios() {
		if only.MatchString(s.name) {
			out = append(out, s)
		}
	}
	return out
}

// TestKubelet builds (or finds in its cache) the kubelet and crictl,
// starts the rig and runs each scenario as a subtest.
func TestKubelet(t *testing.T) {
	if !*kubeFlag {
		t.Skip("the kubelet scenarios run with -kube: go test -count=1 -timeout=30m ./internal/kuberig -kube (README, Tests)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("kuberig: the kubelet stage needs root (containerd, the kubelet, cgroups, a bridge)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Minute)
	defer cancel()
	if err := Install(ctx, testLog{t}); err != nil {
		t.Fatal(err)
	}
	cache := os.Getenv("VIGIL_KUBE_CACHE")
	if cache == "" {
		cache = "/var/cache/vigil-kuberig"
	}
	began := time.Now()
	tools, err := Build(ctx, cache, Pinned(), testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kuberig: kubelet %s and crictl %s (%s, built now: %v, %s)", Pinned().Kubelet, Pinned().Crictl, tools.Key,
		tools.Built, time.Since(began).Round(time.Second))
	dir := t.TempDir()
	e := &env{vigil: filepath.Join(dir, "bin", "vigil"), standin: filepath.Join(dir, "bin", "standin"),
		base: filepath.Join(dir, "base"), ctx: ctx, inside: os.Getenv("VIGIL_KUBE_VIGIL")}
	began = time.Now()
	goBuild(t, "./cmd/vigil", e.vigil)
	goBuild(t, "./internal/kuberig/standin", e.standin)
	if err := Busybox(e.base); err != nil {
		t.Fatal(err)
	}
	t.Logf("kuberig: vigil and the stand-ins built in %s", time.Since(began).Round(time.Second))
	began = time.Now()
	e.rig, err = Start(ctx, Options{Dir: filepath.Join(dir, "rig"), Tools: tools, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kuberig: containerd and the kubelet up in %s", time.Since(began).Round(100*time.Millisecond))
	defer func() {
		if err := e.rig.Close(); err != nil {
			t.Errorf("kuberig: cleanup: %v", err)
		}
	}()
	for _, s := range selected() {
		t.Run(s.name, func(t *testing.T) {
			e.scratch = t.TempDir()
			s.run(t, e)
		})
	}
}

// goBuild builds pkg, static as README builds vigil, to out.
func goBuild(t *testing.T, pkg, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = moduleRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

func moduleRoot(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// testLog passes the rig's progress to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
