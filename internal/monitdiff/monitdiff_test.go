package monitdiff

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var (
	outDir = flag.String("monitdiff.out", "", "write vigil's transcripts to this directory")
	keep   = flag.Bool("monitdiff.keep", false, "keep each scenario's root")
)

// vigilAsMonit is the vigil binary built for these tests, named monit.
var vigilAsMonit string

func TestMain(m *testing.M) {
	ReaperMain()
	flag.Parse()
	dir, err := os.MkdirTemp("", "monitdiff")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	vigilAsMonit = filepath.Join(dir, "monit") // vigil answers as monit under this name
	build := exec.Command("go", "build", "-o", vigilAsMonit, "github.com/vigil-bosh/vigil/cmd/vigil")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build vigil:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestDifferential runs every scenario under vigil and compares what the
// operator and the agent see with the transcript recorded from the real
// monit 5.2.5 (cmd/monitdiff-record). The scenarios run in parallel, each
// with its own root, ports and daemon.
func TestDifferential(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the scenarios run their programs as root, as monit runs them on a stemcell")
	}
	scs, err := Load(filepath.Join("testdata", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(filepath.Join("testdata", "recorded", sc.Name+".txt"))
			if err != nil {
				t.Fatalf("no recording (run cmd/monitdiff-record with monit 5.2.5): %v", err)
			}
			recorded, ok := strings.CutPrefix(string(want), "# recorded from: This is Monit version 5.2.5\n")
			if !ok {
				t.Fatal("the recording does not say it came from monit 5.2.5")
			}
			got, err := Run(context.Background(), sc, Options{Monit: vigilAsMonit, Keep: *keep})
			if *outDir != "" {
				_ = os.WriteFile(filepath.Join(*outDir, sc.Name+".txt"), []byte(got), 0o644)
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, got)
			}
			if d := diff(sc.Grouped(sc.Apply(normalizeLines(recorded))), sc.Grouped(got)); d != "" {
				t.Errorf("vigil differs from monit 5.2.5 (- monit, + vigil):\n%s", d)
			}
		})
	}
}

// diff shows the lines that differ, each block with its step heading.
func diff(want, got string) string {
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// Longest common subsequence, line by line; transcripts are small.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	heading, shown := "", ""
	note := func(prefix, l string) {
		if heading != shown {
			out.WriteString(heading + "\n")
			shown = heading
		}
		out.WriteString(prefix + l + "\n")
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			if strings.HasPrefix(a[i], "## ") {
				heading = a[i]
			}
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			note("+", b[j])
			j++
		default:
			note("-", a[i])
			i++
		}
	}
	return out.String()
}
