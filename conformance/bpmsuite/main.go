//go:build conformance

// Command bpmsuite runs bpm-release's own integration suite
// (src/bpm/integration of cloudfoundry/bpm-release, fetched apart: never
// part of this repository) against vigil answering as bpm and against
// real bpm built from the same checkout, and prints the result spec by
// spec. Each run is a process of its own in private mount and PID
// namespaces, over a throwaway copy-on-write view of this machine's root
// (an overlay whose upper layer is a tmpfs) holding the fixtures the
// suite's image has: /bpmtmp, /var/vcap/packages/bpm/bin/{runc,tini}
// (the machine's own runc and tini) and the user vcap, uid 2000, gid
// 3000. Nothing it does reaches the machine's files (the jobs' cgroups
// are the machine's, and go when the jobs do). With -vm the runs happen
// in the VM rig's guest instead. See README.md.
//
//	go run -tags conformance ./conformance/bpmsuite -release DIR [-vm] [-runs 3] [-against vigil,bpm] [-focus RE] [-vigil DIR] [-keep]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == insideArg {
		os.Exit(inside(os.Args[2:]))
	}
	release := flag.String("release", "", "a checkout of cloudfoundry/bpm-release (the directory holding src/bpm)")
	runs := flag.Int("runs", 3, "runs of the suite against each target")
	against := flag.String("against", "vigil,bpm", "the targets, in order: vigil, bpm")
	focus := flag.String("focus", "", "run only the specs whose full text matches this regular expression (ginkgo's -focus)")
	keep := flag.Bool("keep", false, "keep the work directory (binaries, the suite's output and reports)")
	vm := flag.Bool("vm", false, "run in the VM rig's guest (internal/vmrig), whose root holds every capability")
	guest := flag.Bool("guest", false, "(in the guest) run the runs with what -vm built next to this program")
	vigilSrc := flag.String("vigil", "", "the vigil source tree to build and test (default: the one this runs from)")
	flag.Parse()
	if *release == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: bpmsuite -release DIR [-runs N] [-against vigil,bpm] [-focus RE] [-keep] [-vm]")
		os.Exit(2)
	}
	targets := strings.Split(*against, ",")
	var err error
	if *guest {
		self, _ := os.Executable()
		err = loop(*release, filepath.Dir(self), *runs, targets, *focus)
	} else {
		err = drive(driver{release: *release, vigil: *vigilSrc, runs: *runs, targets: targets, focus: *focus, keep: *keep, vm: *vm})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bpmsuite:", err)
		os.Exit(1)
	}
}

// driver is what a drive does.
type driver struct {
	release, vigil string // the checkouts of bpm-release and of vigil
	runs           int
	targets        []string
	focus          string
	keep, vm       bool
}

// drive builds what the runs need and runs the suite d.runs times against
// each target, here or in the VM rig's guest, printing the results.
func drive(d driver) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the suite needs root (it runs bpm, which needs root, and makes namespaces)")
	}
	var err error
	if d.release, err = filepath.Abs(d.release); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(d.release, "src", "bpm", "integration")); err != nil {
		return fmt.Errorf("%s is no bpm-release checkout: %w", d.release, err)
	}
	for _, t := range d.targets {
		if t != "vigil" && t != "bpm" {
			return fmt.Errorf("unknown target %q (vigil, bpm)", t)
		}
	}
	if d.vigil == "" {
		if d.vigil, err = vigilModule(); err != nil {
			return err
		}
	}
	work, err := os.MkdirTemp("", "bpmsuite")
	if err != nil {
		return err
	}
	if d.keep {
		fmt.Println("work directory:", work)
	} else {
		defer os.RemoveAll(work)
	}
	if err := os.Chmod(work, 0o755); err != nil {
		return err
	}
	fmt.Printf("bpm-release %s\nvigil %s\n", describe(d.release), describe(d.vigil))
	if err := build(d.release, d.vigil, work); err != nil {
		return err
	}
	if d.vm {
		return driveVM(d.release, work, d.runs, d.targets, d.focus)
	}
	return loop(d.release, work, d.runs, d.targets, d.focus)
}

// loop runs the suite runs times against each target, with what build
// left in work, and prints the results.
func loop(release, work string, runs int, targets []string, focus string) error {
	res := newResults(targets, runs)
	for r := 1; r <= runs; r++ {
		for _, t := range targets {
			specs, err := run(release, work, t, r, focus)
			if err != nil {
				return err
			}
			res.add(t, r, specs)
			fmt.Printf("run %d against %s: %s\n", r, t, count(specs))
		}
	}
	res.print(os.Stdout)
	return nil
}

// vigilModule is the directory of this program's module, vigil's.
func vigilModule() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find vigil's module (run this from its tree): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// describe names the commit of a checkout, when it is a git work tree,
// and says whether it has changes.
func describe(dir string) string {
	out, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%H %cs").Output()
	if err != nil {
		return "at " + dir + " (not a git work tree: its commit is unknown)"
	}
	desc := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		desc += " with changes"
	}
	return desc
}

// build makes, in work: vigil (from the tree vigil, as the release
// builds it), bpm (the checkout's), the suite's test binary, and the go that the
// suite's gexec.Build finds first on PATH, which hands it the binary
// under test instead of compiling bpm at run time.
func build(release, vigil, work string) error {
	src := filepath.Join(release, "src", "bpm")
	steps := []struct {
		dir  string
		args []string
	}{
		{vigil, []string{"build", "-o", filepath.Join(work, "vigil"), "./cmd/vigil"}},
		{vigil, []string{"build", "-ldflags", "-X main.version=" + stamp, "-o", filepath.Join(work, "vigil-"+stamp), "./cmd/vigil"}},
		{src, []string{"build", "-mod=vendor", "-o", filepath.Join(work, "bpm"), "./cmd/bpm"}},
		{src, []string{"build", "-mod=vendor", "-ldflags", "-X bpm/commands.Version=" + stamp, "-o", filepath.Join(work, "bpm-"+stamp), "./cmd/bpm"}},
		{src, []string{"test", "-mod=vendor", "-c", "-o", filepath.Join(work, "integration.test"), "./integration"}},
	}
	for _, s := range steps {
		cmd := exec.Command("go", s.args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, os.Stderr, os.Stderr
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go %s in %s: %w", strings.Join(s.args, " "), s.dir, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(work, "gobin"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(work, "gobin", "go"), []byte(fakeGo), 0o755)
}

// stamp is the version the suite's version specs build bpm with
// (-ldflags "-X bpm/commands.Version=1.2.3"); vigil's release build is
// stamped with -X main.version, and prints 1.4.38+vigil.VERSION.
const stamp = "1.2.3"

// fakeGo stands in for "go build [-ldflags -X bpm/commands.Version=1.2.3]
// -o PATH bpm/cmd/bpm", the suite's only uses of go: it copies the binary
// under test ($BPMSUITE_BPM), or its build stamped with that version, to
// PATH. The copy of vigil is named bpm, which makes it answer as bpm.
const fakeGo = `#!/bin/sh
bin=$BPMSUITE_BPM
while [ $# -gt 0 ]; do
	case "$1" in
	-X\ bpm/commands.Version=` + stamp + `) bin=$BPMSUITE_BPM-` + stamp + ` ;;
	-X*) echo "bpmsuite's go: no build for $1" >&2; exit 1 ;;
	-o) exec cp "$bin" "$2" ;;
	esac
	shift
done
echo "bpmsuite's go: no -o in the arguments" >&2
exit 1
`

// run runs the suite once against target in a process of its own (the
// PID 1 of new mount and PID namespaces: see inside) and returns its
// specs' results.
func run(release, work, target string, n int, focus string) ([]spec, error) {
	out := filepath.Join(work, fmt.Sprintf("%s-%d", target, n))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(out, "suite.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	args := []string{insideArg, "-release", release, "-work", work, "-target", target, "-out", out, "-focus", focus}
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = namespaces()
	err = cmd.Run() // a failing spec fails the suite: the report says which
	specs, rerr := readReport(filepath.Join(out, "report.json"))
	if rerr != nil {
		return nil, fmt.Errorf("run %d against %s (%v): %w; see %s", n, target, err, rerr, log.Name())
	}
	return specs, nil
}
