//go:build conformance

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigil-bosh/vigil/internal/vmrig"
)

// guestRecipe is the VM rig's guest (Debian 13, systemd, cgroup v2) with
// what the suite runs (runc, tini, nc, strace, ps, ipcmk) and no vcap:
// each run makes its own, with the suite's uid and gid.
func guestRecipe() vmrig.Recipe {
	r := vmrig.GuestRecipe()
	r.Packages = append(r.Packages, "runc", "tini", "netcat-openbsd", "strace", "util-linux", "passwd")
	r.Users = nil
	return r
}

// driveVM runs the runs inside one boot of the VM rig's guest, whose root
// holds every capability (this machine's may not: bpm-release's
// privileged spec wants all 38 of Docker's). The guest runs this program
// (built here, with the rest, into work, which it mounts at /rig) as the
// driver of the runs, then powers off; the reports come back in work.
func driveVM(release, work string, runs int, targets []string, focus string) error {
	self, err := vigilModule()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-tags", "conformance", "-o", filepath.Join(work, "bpmsuite"), "./conformance/bpmsuite")
	cmd.Dir, cmd.Stderr, cmd.Env = self, os.Stderr, append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build bpmsuite: %w", err)
	}
	testdata := filepath.Join("src", "bpm", "integration", "testdata")
	if out, err := exec.Command("mkdir", "-p", filepath.Join(work, "release", filepath.Dir(testdata))).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(release, testdata), filepath.Join(work, "release", testdata)).CombinedOutput(); err != nil {
		return fmt.Errorf("copy the suite's fixtures: %w: %s", err, out)
	}
	script := fmt.Sprintf("#!/bin/sh\n/rig/bpmsuite -guest -release /rig/release -runs %d -against %s -focus '%s' >/rig/guest.log 2>&1\necho $? >/rig/guest.rc\n",
		runs, strings.Join(targets, ","), strings.ReplaceAll(focus, "'", `'\''`))
	if err := os.WriteFile(filepath.Join(work, "run"), []byte(script), 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
	defer cancel()
	cache := os.Getenv("VIGIL_VM_CACHE")
	if cache == "" {
		cache = "/var/cache/vigil-vmrig"
	}
	img, err := vmrig.Build(ctx, cache, guestRecipe(), os.Stderr)
	if err != nil {
		return err
	}
	console, err := os.Create(filepath.Join(work, "console.log"))
	if err != nil {
		return err
	}
	defer console.Close()
	res, err := vmrig.Machine{Image: img, Share: work, Memory: 4096, Console: console}.Run(ctx)
	fmt.Printf("vm: %s (%s), whole boot %s\n", res.Accel, res.AccelWhy, res.Total.Round(time.Second))
	if err != nil {
		return fmt.Errorf("%w (see %s)", err, console.Name())
	}
	if b, err := os.ReadFile(filepath.Join(work, "guest.log")); err == nil {
		fmt.Printf("the guest's driver:\n%s", b)
	}
	return nil
}
