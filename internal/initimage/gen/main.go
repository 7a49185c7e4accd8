// Command gen builds vigil-init for each architecture vigil carries it for,
// into the files package initimage embeds ("go generate" in its directory
// runs it). The build is reproducible (no paths, no VCS stamp, no symbol
// table), so its test can rebuild and compare.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// arches are the architectures an image is embedded for; others run vigil
// itself as the init.
var arches = []string{"amd64", "arm64"}

func main() {
	out := flag.String("o", ".", "the directory to write vigil-init.linux-ARCH into")
	flag.Parse()
	for _, arch := range arches {
		if err := build(arch, *out); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

// build builds ./cmd/vigil-init (relative to the working directory, the
// package's) for linux/arch into dir.
func build(arch, dir string) error {
	out, err := filepath.Abs(filepath.Join(dir, "vigil-init.linux-"+arch))
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", out, "./cmd/vigil-init")
	// The collector before Go 1.26's (the experiment's opt-out, which Go
	// 1.27 is to remove): Green Tea keeps each small-object span's mark
	// bits in the span's last page, so that an init, whose few objects
	// fall in many size classes, touches two pages of each span instead of
	// one: 36 KiB an init (BenchmarkInitIdleMemory, 618 -> 582 KiB).
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOEXPERIMENT=nogreenteagc", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build vigil-init for %s: %w", arch, err)
	}
	return nil
}
