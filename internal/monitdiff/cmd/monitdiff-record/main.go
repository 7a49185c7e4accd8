// Command monitdiff-record runs the differential scenarios under a real
// monit 5.2.5 and writes what it saw as the expected transcripts:
//
//	go run ./internal/monitdiff/cmd/monitdiff-record [-run REGEXP] PATH-TO-MONIT
//
// The binary must be monit 5.2.5 (the one BOSH ships in the bosh-agent
// repository at integration/assets/monit); it is refused otherwise. Run it
// as root from the module's root; it writes
// internal/monitdiff/testdata/recorded/NAME.txt for each scenario.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/vigil-bosh/vigil/internal/monitdiff"
)

func main() {
	monitdiff.ReaperMain()
	run := flag.String("run", "", "only the scenarios whose name matches")
	keep := flag.Bool("keep", false, "keep each scenario's root (its path is in the error)")
	dir := flag.String("dir", filepath.Join("internal", "monitdiff", "testdata"), "the scenarios' testdata directory")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: monitdiff-record [-run REGEXP] PATH-TO-MONIT")
		os.Exit(2)
	}
	if err := record(flag.Arg(0), *dir, *run, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "monitdiff-record:", err)
		os.Exit(1)
	}
}

func record(monit, dir, run string, keep bool) error {
	ver, err := exec.Command(monit, "-V").Output()
	if err != nil {
		return fmt.Errorf("%s -V: %w", monit, err)
	}
	first, _, _ := strings.Cut(string(ver), "\n")
	if first != "This is Monit version 5.2.5" {
		return fmt.Errorf("%s is %q, not monit 5.2.5", monit, first)
	}
	scs, err := monitdiff.Load(filepath.Join(dir, "scenarios"))
	if err != nil {
		return err
	}
	re, err := regexp.Compile(run)
	if err != nil {
		return fmt.Errorf("-run: %w", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(scs))
	for i, sc := range scs {
		if !re.MatchString(sc.Name) {
			continue
		}
		wg.Go(func() {
			out, err := monitdiff.Run(context.Background(), sc, monitdiff.Options{Monit: monit, Keep: keep})
			if err != nil {
				errs[i] = err
				return
			}
			text := "# recorded from: " + first + "\n" + out
			errs[i] = os.WriteFile(filepath.Join(dir, "recorded", sc.Name+".txt"), []byte(text), 0o644)
			fmt.Println("recorded", sc.Name)
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
