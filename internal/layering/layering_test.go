package layering

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pkg is one package as go list reports it, paths relative to the module.
type pkg struct {
	ImportPath                string
	Imports                   []string
	TestImports, XTestImports []string
}

// list runs go list over the module.
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	return pkgs
}

// word is how the table names an import: its path in the module, a word
// of outside, or the path itself; false for the standard library.
func word(imp string) (string, bool) {
	if rel, ok := strings.CutPrefix(imp, module); ok {
		return rel, true
	}
	for w, prefix := range outside {
		if strings.HasPrefix(imp, prefix) {
			return w, true
		}
	}
	first, _, _ := strings.Cut(imp, "/")
	return imp, strings.Contains(first, ".")
}

// check returns one complaint per import that the rules do not allow, per
// package the rules do not know, and per rule about no package.
func check(pkgs []pkg) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(p.ImportPath, module)
		seen[rel] = true
		allowed, ok := rules[rel]
		if !ok {
			out = append(out, rel+": not in the rules: add it, and its row in docs/ARCHITECTURE.md")
			continue
		}
		for _, imp := range p.Imports {
			if w, ok := word(imp); ok && !slices.Contains(allowed, w) {
				out = append(out, rel+" imports "+w+", which the architecture does not allow")
			}
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if w, ok := word(imp); ok && slices.Contains(never[rel], w) {
				out = append(out, rel+" (or its tests) imports "+w+", which it must never do")
			}
		}
	}
	for rel := range rules {
		if !seen[rel] {
			out = append(out, "the rules name "+rel+", which is no package of the module")
		}
	}
	slices.Sort(out)
	return out
}

// TestImportsFollowTheRules reads the import graph and fails on every edge
// that the rules do not allow.
func TestImportsFollowTheRules(t *testing.T) {
	for _, c := range check(list(t)) {
		t.Error(c)
	}
}

// TestCheckCatchesForbiddenImports: a forbidden edge, a package missing
// from the rules and a rule about no package are each reported.
func TestCheckCatchesForbiddenImports(t *testing.T) {
	// The packages by their paths, as the rules name them.
	sys, dmn, sup, prc, flt, jb := "internal/backend/systemd", "internal/backend/daemon", "internal/supervise", "internal/launch", "internal/faults", "job"
	var pkgs []pkg
	for rel := range rules {
		if rel != flt {
			pkgs = append(pkgs, pkg{ImportPath: module + rel})
		}
	}
	pkgs = append(pkgs, pkg{ImportPath: module + "newpkg"})
	for i := range pkgs {
		switch strings.TrimPrefix(pkgs[i].ImportPath, module) {
		case sys:
			pkgs[i].Imports = []string{"fmt", module + dmn, "golang.org/x/sys/unix"}
		case sup:
			pkgs[i].XTestImports = []string{module + prc}
		case jb:
			pkgs[i].Imports = []string{"github.com/else/where"}
		}
	}
	got := check(pkgs)
	want := []string{
		jb + " imports github.com/else/where, which the architecture does not allow",
		"newpkg: not in the rules: add it, and its row in docs/ARCHITECTURE.md",
		sup + " (or its tests) imports " + prc + ", which it must never do",
		sys + " (or its tests) imports " + dmn + ", which it must never do",
		sys + " imports " + dmn + ", which the architecture does not allow",
		"the rules name " + flt + ", which is no package of the module",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("complaints:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestArchitectureTable: the package table of docs/ARCHITECTURE.md has a
// row per package whose last column lists exactly what the rules allow
// ("stdlib" for nothing else).
func TestArchitectureTable(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.Open(filepath.Join(filepath.Dir(strings.TrimSpace(string(gomod))), "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer doc.Close()
	rows := tableRows(t, doc)
	for rel, allowed := range rules {
		got, ok := rows[rel]
		if !ok {
			t.Errorf("ARCHITECTURE.md has no row for %s", rel)
			continue
		}
		want := slices.Sorted(slices.Values(allowed))
		if !slices.Equal(got, want) {
			t.Errorf("ARCHITECTURE.md: %s may import %v, the rules say %v", rel, got, want)
		}
	}
	for rel := range rows {
		if _, ok := rules[rel]; !ok {
			t.Errorf("ARCHITECTURE.md has a row for %s, which the rules do not know", rel)
		}
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// tableRows reads the table under "## Packages": the package of each row
// (its first cell) and what it may import (its last cell), sorted.
func tableRows(t *testing.T, r io.Reader) map[string][]string {
	rows := map[string][]string{}
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Packages"
			continue
		case in && (strings.HasPrefix(line, "<<<<<<< ") || strings.HasPrefix(line, ">>>>>>> ") || line == "======="):
			t.Errorf("ARCHITECTURE.md: a conflict marker in the package table: %s", line)
			continue
		case !in || !strings.HasPrefix(line, "| `"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		names := backticked.FindAllStringSubmatch(cells[0], -1)
		if len(names) != 1 {
			t.Errorf("ARCHITECTURE.md: a row must name one package: %s", cells[0])
			continue
		}
		may := []string{}
		for _, m := range backticked.FindAllStringSubmatch(cells[len(cells)-1], -1) {
			may = append(may, m[1])
		}
		slices.Sort(may)
		if _, twice := rows[names[0][1]]; twice {
			t.Errorf("ARCHITECTURE.md: two rows for %s (a merge that kept both sides?)", names[0][1])
		}
		rows[names[0][1]] = may
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}
