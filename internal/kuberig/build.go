// Package kuberig runs pods under a real, standalone kubelet on this
// machine: the kubelet and crictl built from the Go module proxy and
// cached, Debian's containerd, runc and CNI plugins, containerd and the
// kubelet started in a directory of the rig's own (static pods from a
// manifest directory, no API server), images imported from archives
// (no registry), a bridge of its own for the pods' network. Close undoes
// everything Start did, also after a failure. Its test, TestKubelet -kube,
// runs the scenarios of vigil as the pods' entrypoint (README, Tests).
package kuberig

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Versions are what the rig builds: the kubelet from k8s.io/kubernetes at
// Kubelet, its staging modules (k8s.io/api, ...) at the published Staging
// instead of the ./staging directories its go.mod replaces them with, and
// crictl from cri-tools at Crictl.
type Versions struct {
	Kubelet, Staging, Crictl string
}

// Pinned are the versions the rig runs: kubelet 1.34 is the newest that
// still runs on a cgroup v1 host by default (this machine's), and
// containerd 1.6, Debian 12's, serves its CRI.
func Pinned() Versions {
	return Versions{Kubelet: "v1.34.4", Staging: "v0.34.4", Crictl: "v1.34.0"}
}

// Tools are the built binaries.
type Tools struct {
	Kubelet, Crictl string
	Key             string // the digest naming them in the cache
	Built           bool   // true when this call built them (a cold cache)
}

// toolsFormat changes when the way the tools are built changes.
const toolsFormat = "vigil-kuberig-1"

// key is the digest of what the build depends on: the versions, this
// format and the Go toolchain.
func (v Versions) key() string {
	b, _ := json.Marshal(struct {
		Format, Go string
		V          Versions
	}{toolsFormat, runtime.Version(), v})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Build returns the kubelet and crictl of v from cacheDir/KEY, building
// them first when the cache has none. The kubelet's build runs in a module
// written for it in the cache (never vigil's own): it requires
// k8s.io/kubernetes and replaces each staging module, as that module's
// go.mod lists them, by its published version. Builders of the same cache
// wait for each other on a lock file; the binaries appear in the cache
// only once both are complete. Progress goes to log.
func Build(ctx context.Context, cacheDir string, v Versions, log io.Writer) (Tools, error) {
	key := v.key()
	dir := filepath.Join(cacheDir, key)
	t := Tools{Kubelet: filepath.Join(dir, "kubelet"), Crictl: filepath.Join(dir, "crictl"), Key: key}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return t, fmt.Errorf("kubelet cache: %w", err)
	}
	unlock, err := lock(filepath.Join(cacheDir, "lock"))
	if err != nil {
		return t, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return t, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return t, fmt.Errorf("kubelet cache: %w", err)
	}
	work := filepath.Join(cacheDir, key+".build")
	if err := os.RemoveAll(work); err != nil {
		return t, fmt.Errorf("kubelet cache: %w", err)
	}
	if err := build(ctx, work, v, log); err != nil {
		return t, err
	}
	for _, b := range []string{"kubelet", "crictl"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return t, err
		}
		if err := os.Rename(filepath.Join(work, "bin", b), filepath.Join(dir, b)); err != nil {
			return t, fmt.Errorf("kubelet cache: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), []byte(v.Kubelet+" "+v.Crictl+"\n"), 0o644); err != nil {
		return t, err
	}
	t.Built = true
	return t, os.RemoveAll(work)
}

// build builds both binaries into work/bin.
func build(ctx context.Context, work string, v Versions, log io.Writer) error {
	mod := filepath.Join(work, "kubelet")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return err
	}
	// The module proxy serves both; outside a module, GOFLAGS must not
	// point at a vendor directory or a workspace.
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false", "GOBIN="+filepath.Join(work, "bin"))
	gomod, err := wrapperMod(ctx, mod, env, v)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), gomod, 0o644); err != nil {
		return err
	}
	// tools.go keeps go mod tidy from dropping the requirement.
	tools := "//go:build tools\n\npackage tools\n\nimport _ \"k8s.io/kubernetes/cmd/kubelet\"\n"
	if err := os.WriteFile(filepath.Join(mod, "tools.go"), []byte(tools), 0o644); err != nil {
		return err
	}
	if err := goCmd(ctx, mod, env, log, "mod", "tidy"); err != nil {
		return err
	}
	minor := strings.Split(strings.TrimPrefix(v.Kubelet, "v"), ".")[1]
	ldflags := strings.Join([]string{
		"-X k8s.io/component-base/version.gitVersion=" + v.Kubelet,
		"-X k8s.io/component-base/version.gitMajor=1",
		"-X k8s.io/component-base/version.gitMinor=" + minor,
		"-X k8s.io/component-base/version.gitTreeState=clean",
		"-X k8s.io/client-go/pkg/version.gitVersion=" + v.Kubelet,
	}, " ")
	if err := goCmd(ctx, mod, env, log, "build", "-ldflags", ldflags, "-o", filepath.Join(work, "bin", "kubelet"),
		"k8s.io/kubernetes/cmd/kubelet"); err != nil {
		return err
	}
	return goCmd(ctx, work, env, log, "install", "sigs.k8s.io/cri-tools/cmd/crictl@"+v.Crictl)
}

// stagingReplace is one line of k8s.io/kubernetes's go.mod that replaces
// a staging module by its directory in the repository.
var stagingReplace = regexp.MustCompile(`^\s*(k8s\.io/[a-z0-9-]+)\s+=>\s+\./staging/`)

// wrapperMod writes the go.mod of the wrapper module: k8s.io/kubernetes
// required, each staging module its go.mod replaces by a directory
// replaced by its published version instead, and its go and godebug lines.
func wrapperMod(ctx context.Context, dir string, env []string, v Versions) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "k8s.io/kubernetes@"+v.Kubelet)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubelet: go mod download k8s.io/kubernetes@%s: %w", v.Kubelet, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil || info.GoMod == "" {
		return nil, fmt.Errorf("kubelet: go mod download said %q: %v", out, err)
	}
	upstream, err := os.ReadFile(info.GoMod)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "module vigil.invalid/kubelet\n\n")
	var replaces []string
	sc := bufio.NewScanner(bytes.NewReader(upstream))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "go ") || strings.HasPrefix(line, "godebug "):
			fmt.Fprintln(&b, line)
		case stagingReplace.MatchString(line):
			m := stagingReplace.FindStringSubmatch(line)
			replaces = append(replaces, fmt.Sprintf("\t%s => %s %s", m[1], m[1], v.Staging))
		}
	}
	if len(replaces) == 0 {
		return nil, errors.New("kubelet: k8s.io/kubernetes's go.mod replaces no staging module")
	}
	fmt.Fprintf(&b, "\nrequire k8s.io/kubernetes %s\n\nreplace (\n%s\n)\n", v.Kubelet, strings.Join(replaces, "\n"))
	return b.Bytes(), nil
}

// goCmd runs the go command in dir with its output on log.
func goCmd(ctx context.Context, dir string, env []string, log io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubelet build: go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// lock takes an exclusive lock on path, waiting for another builder; the
// returned function releases it.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		if err = unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kubelet cache lock: %w", err)
	}
	return func() { f.Close() }, nil
}
