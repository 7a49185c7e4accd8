package pkginit

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite tasks.go from the module's imports (go list)")

func TestUnneeded(t *testing.T) {
	for _, c := range []struct {
		args []string
		want group
	}{
		{[]string{"/v/vigil", "init", "web/server"}, metricsLib | daemonSide},
		{[]string{"/v/vigil", "init", "--enter"}, metricsLib | daemonSide},
		{[]string{"/v/vigil", "init"}, metricsLib | daemonSide},
		{[]string{"/v/vigil", "status", "--json"}, metricsLib},
		{[]string{"/v/bpm", "pid", "web"}, metricsLib},
		{[]string{"/v/monit", "summary"}, metricsLib},
		{[]string{"/v/monit", "-I", "-c", "monitrc"}, metricsLib},
		{[]string{"/v/vigil", "daemon", "--root", "/r"}, metricsLib},
		{[]string{"/v/vigil", "daemon", "--http", "127.0.0.1:2823"}, 0},
		{[]string{"/v/vigil", "daemon", "-http=127.0.0.1:2823"}, 0},
		{[]string{"/v/vigil", "daemon", "--backend", "systemd", "--http-credentials", "f"}, 0},
		{[]string{"/v/vigil", "demo"}, 0},
		{[]string{"/v/vigil", "--root", "/r", "demo"}, 0},
		{[]string{"/v/vigil"}, metricsLib},
		{[]string{"/v/vigil", "status", "init"}, metricsLib}, // only argv[1] makes an init
		{[]string{"/tmp/go-build1/b001/vigil.test", "-test.run=TestX"}, 0},
		{[]string{"/tmp/go-build1/b001/vigil.test", "init"}, 0},
		{nil, 0},
	} {
		if got := unneeded(c.args); got != c.want {
			t.Errorf("unneeded(%q) = %b, want %b", c.args, got, c.want)
		}
	}
}

func TestLayoutKnown(t *testing.T) {
	for v, want := range map[string]bool{
		"go1.21.0": true, "go1.26.8": true, "go1.26rc1": true, "go1.20.14": false,
		"go1.27.0": false, "devel go1.27-abcdef": false, "": false, "go2.0": false,
	} {
		if got := layoutKnown(v); got != want {
			t.Errorf("layoutKnown(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestSkipMarksOnlyUnstartedRecordsOfUnneededGroups(t *testing.T) {
	recs := make([]initTask, 4)
	recs[1].state = 2 // already initialised before pkginit: left as it is
	ts := []task{
		{"m0", metricsLib, &recs[0]}, {"m1", metricsLib, &recs[1]},
		{"d0", daemonSide, &recs[2]}, {"d1", daemonSide, &recs[3]},
	}
	if got := skip(ts, []string{"vigil", "status"}, "go1.26.8"); got != metricsLib {
		t.Fatalf("status skipped %b, want the metrics library only", got)
	}
	if states := []uint32{recs[0].state, recs[1].state, recs[2].state, recs[3].state}; !slices.Equal(states, []uint32{2, 2, 0, 0}) {
		t.Fatalf("states after a status skip: %v", states)
	}
	if got := skip(ts, []string{"vigil", "init"}, "go1.26.8"); got != daemonSide {
		t.Fatalf("init skipped %b, want the daemon side (the metrics library was already marked)", got)
	}
	if recs[2].state != 2 || recs[3].state != 2 {
		t.Fatalf("the init left daemon packages to initialise: %+v", recs)
	}
	fresh := make([]initTask, 1)
	if got := skip([]task{{"m", metricsLib, &fresh[0]}}, []string{"vigil", "init"}, "go1.30.0"); got != 0 || fresh[0].state != 0 {
		t.Fatal("a runtime of unknown layout had its records written")
	}
	if got := skip([]task{{"m", metricsLib, &fresh[0]}}, []string{"vigil", "daemon", "--http", ":1"}, "go1.26.8"); got != 0 || fresh[0].state != 0 {
		t.Fatal("a daemon serving /metrics had the metrics library skipped")
	}
}

// TestTasksFollowTheImports checks tasks.go against the module's import
// graph: it must name every non-standard package cmd/vigil links that
// procinit does not import, grouped as the metrics library when only
// package metrics brings it in.
func TestTasksFollowTheImports(t *testing.T) {
	src := renderTasks(expectedTasks(t))
	if *update {
		if err := os.WriteFile("tasks.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("tasks.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("tasks.go does not follow the module's imports any more: run\n\tgo test ./internal/pkginit -update\nand check the new entries. It should be:\n%s", src)
	}
}

const module = "github.com/vigil-bosh/vigil"

// expectedTasks computes the records pkginit must know from `go list`.
func expectedTasks(t *testing.T) []task {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f",
		"{{if not .Standard}}{{.ImportPath}} {{join .Imports \" \"}}{{end}}", module+"/cmd/vigil").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		imports[f[0]] = f[1:]
	}
	closure := func(roots ...string) map[string]bool {
		seen := map[string]bool{}
		var walk func(string)
		walk = func(p string) {
			if _, ok := imports[p]; !ok || seen[p] {
				return // standard library, or done
			}
			seen[p] = true
			for _, q := range imports[p] {
				walk(q)
			}
		}
		for _, r := range roots {
			walk(r)
		}
		return seen
	}
	inInit := closure(module + "/procinit")
	var others []string // every vigil package but the ones that import the metrics library
	for p := range imports {
		if strings.HasPrefix(p, module+"/") && !slices.Contains([]string{module + "/metrics", module + "/demo", module + "/cmd/vigil"}, p) {
			others = append(others, p)
		}
	}
	notMetrics := closure(others...)
	var ts []task
	for p := range imports {
		if inInit[p] || p == module+"/cmd/vigil" || p == module+"/internal/pkginit" {
			continue
		}
		g := daemonSide
		if !notMetrics[p] {
			g = metricsLib
		}
		ts = append(ts, task{path: p, group: g})
	}
	slices.SortFunc(ts, func(a, b task) int { return strings.Compare(a.path, b.path) })
	return ts
}

// renderTasks writes tasks.go for ts.
func renderTasks(ts []task) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by go test ./internal/pkginit -update; DO NOT EDIT.\n\n")
	b.WriteString("package pkginit\n\nimport _ \"unsafe\" // go:linkname\n\n")
	b.WriteString("// The initialisation records of the packages a process may skip. A package\n")
	b.WriteString("// without initialisation work has none; its name then refers to a record\n")
	b.WriteString("// of its own here, which nothing reads.\n")
	b.WriteString("var (\n")
	for _, tk := range ts {
		fmt.Fprintf(&b, "\t//go:linkname %s %s..inittask\n\t%s initTask\n", varName(tk.path), tk.path, varName(tk.path))
	}
	b.WriteString(")\n\n")
	b.WriteString("// tasks lists the records with the group each belongs to.\n")
	b.WriteString("func tasks() []task {\n\treturn []task{\n")
	for _, tk := range ts {
		g := "daemonSide"
		if tk.group == metricsLib {
			g = "metricsLib"
		}
		fmt.Fprintf(&b, "\t\t{%q, %s, &%s},\n", tk.path, g, varName(tk.path))
	}
	b.WriteString("\t}\n}\n")
	return b.Bytes()
}

// varName is the variable of path's record: the path with every character
// that cannot be in an identifier replaced, so that an import added or
// removed changes only its own lines of tasks.go.
func varName(path string) string {
	return "rec_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, path)
}
