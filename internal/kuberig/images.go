package kuberig

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vigil-bosh/vigil/internal/ociimage"
)

// pauseRef is the pods' sandbox image, built by the rig (never pulled).
const pauseRef = "localhost/kuberig/pause:1"

// Busybox writes a small root file system into dir: Debian's static
// busybox with a link for each of its programs, /etc/passwd and
// /etc/group with root and nobody, and /tmp. It is the base of the rig's
// images (the jobs' scripts need a shell).
func Busybox(dir string) error {
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{bin, filepath.Join(dir, "etc"), filepath.Join(dir, "tmp"), filepath.Join(dir, "root")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o777|os.ModeSticky); err != nil {
		return err
	}
	b, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return fmt.Errorf("kuberig: the base needs busybox-static: %w", err)
	}
	if err := os.WriteFile(filepath.Join(bin, "busybox"), b, 0o755); err != nil {
		return err
	}
	out, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return fmt.Errorf("kuberig: busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(bin, applet)); err != nil {
			return err
		}
	}
	for name, text := range map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
		"etc/group":  "root:x:0:\nnogroup:x:65534:\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pauseImage writes the sandbox image's archive into dir: busybox, whose
// shell waits for TERM or INT and exits 0.
func pauseImage(dir string) (string, error) {
	base := filepath.Join(dir, "pause-root")
	if err := Busybox(base); err != nil {
		return "", err
	}
	lw, err := ociimage.NewLayer(dir)
	if err != nil {
		return "", err
	}
	if err := lw.Tree(base, "", nil, nil); err != nil {
		return "", err
	}
	layer, err := lw.Close()
	if err != nil {
		return "", err
	}
	defer os.Remove(layer.Path)
	archive := filepath.Join(dir, "pause.tar")
	f, err := os.Create(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	cfg := ociimage.Config{Cmd: []string{"/bin/sh", "-c", `trap "exit 0" TERM INT; while :; do sleep 3600 & wait; done`},
		Env: []string{"PATH=/bin"}}
	if err := ociimage.Write(f, pauseRef, cfg, []ociimage.Layer{layer}); err != nil {
		return "", err
	}
	return archive, f.Close()
}

// VigilImage builds the image ref of the BOSH root with `vigil image`, as
// a user does, on base, and imports it. The image holds inside, or the
// vigil that builds it when inside is "".
func (r *Rig) VigilImage(ctx context.Context, vigil, inside, root, base, ref string) error {
	archive := filepath.Join(r.dir, "images", strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
	args := []string{"image", "--root", root, "--base", base, "--output", archive, ref}
	if inside != "" {
		args = append(args, "--vigil", inside)
	}
	out, err := exec.CommandContext(ctx, vigil, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kuberig: vigil image %s: %w: %s", ref, err, out)
	}
	return r.Import(ctx, archive)
}
