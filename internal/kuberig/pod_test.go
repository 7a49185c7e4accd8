package kuberig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// job is one BOSH job of a scenario's root: files below jobs/NAME, those
// under bin/ executable.
type job struct {
	name  string
	files map[string]string
}

// boshRoot writes a BOSH root holding jobs and the stand-in program at
// packages/standin/bin/standin.
func boshRoot(t *testing.T, e *env, name string, jobs ...job) string {
	t.Helper()
	root := filepath.Join(e.scratch, "roots", name)
	write := func(path string, b []byte, mode os.FileMode) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range jobs {
		for rel, text := range j.files {
			mode := os.FileMode(0o644)
			if strings.HasPrefix(rel, "bin/") {
				mode = 0o755
			}
			write(filepath.Join(root, "jobs", j.name, rel), []byte(text), mode)
		}
	}
	b, err := os.ReadFile(e.standin)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(root, "packages", "standin", "bin", "standin"), b, 0o755)
	return root
}

// image builds the image of a root with vigil image and imports it.
func image(t *testing.T, e *env, root, ref string) {
	t.Helper()
	if err := e.rig.VigilImage(e.ctx, e.vigil, e.inside, root, e.base, ref); err != nil {
		t.Fatal(err)
	}
}

// shared is the host directory a scenario's pods see at /shared, where
// its scripts record what they saw.
func shared(t *testing.T, e *env) string {
	t.Helper()
	dir := filepath.Join(e.scratch, "shared")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// manifest renders a pod as YAML.
func manifest(t *testing.T, pod map[string]any) []byte {
	t.Helper()
	b, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// vigilContainer is a container running vigil container on the image's
// root, as examples/kubernetes/pod.yaml wires it: the drain stamps, a
// preStop vigil drain --wait-all, HTTP readiness and liveness on port.
func vigilContainer(name, image string, grace, port int, security map[string]any) map[string]any {
	return map[string]any{
		"name": name, "image": image, "imagePullPolicy": "Never",
		"command": []string{"/usr/local/bin/vigil", "container", "--root", "/var/vcap", "--grace", fmt.Sprintf("%ds", grace),
			"--stamps", "/var/vigil/stamps", "--name", name, "--probes", fmt.Sprintf(":%d", port), "--console"},
		"securityContext": security,
		"volumeMounts": []map[string]any{
			{"name": "drain-stamps", "mountPath": "/var/vigil/stamps"},
			{"name": "shared", "mountPath": "/shared"},
		},
		"lifecycle": map[string]any{"preStop": map[string]any{"exec": map[string]any{
			"command": []string{"/usr/local/bin/vigil", "drain", "--root", "/var/vcap", "--wait-all", "/var/vigil/stamps", "--name", name}}}},
		"readinessProbe": map[string]any{"httpGet": map[string]any{"port": port, "path": "/readyz"}, "periodSeconds": 1},
		"livenessProbe":  map[string]any{"httpGet": map[string]any{"port": port, "path": "/livez"}, "periodSeconds": 5},
	}
}

// podOf is a pod of containers with the drain stamps' emptyDir and the
// scenario's shared directory.
func podOf(name string, grace int, sharedDir string, containers ...map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"terminationGracePeriodSeconds": grace,
			"volumes": []map[string]any{
				{"name": "drain-stamps", "emptyDir": map[string]any{}},
				{"name": "shared", "hostPath": map[string]any{"path": sharedDir, "type": "Directory"}},
			},
			"containers": containers,
		},
	}
}

// privileged is the securityContext that keeps bpm's whole isolation.
func privileged() map[string]any { return map[string]any{"privileged": true} }
