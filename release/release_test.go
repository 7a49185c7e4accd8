// Package release_test checks vigil's BOSH release directory: its specs,
// its templates (rendered by Ruby's ERB with BOSH's helpers), its
// pre-start scripts on a stemcell's layout, its ops-files, and that
// scripts/create-release makes a tarball whose packages build in a clean
// directory.
package release_test

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type jobSpec struct {
	Name        string                    `yaml:"name"`
	Description string                    `yaml:"description"`
	Templates   map[string]string         `yaml:"templates"`
	Packages    []string                  `yaml:"packages"`
	Properties  map[string]map[string]any `yaml:"properties"`
}

type packageSpec struct {
	Name         string   `yaml:"name"`
	Dependencies []string `yaml:"dependencies"`
	Files        []string `yaml:"files"`
}

func readSpec(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true) // a misspelt key is an error here, as it would be unnoticed by BOSH
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func jobs(t *testing.T) map[string]jobSpec {
	t.Helper()
	out := map[string]jobSpec{}
	dirs, _ := filepath.Glob("jobs/*")
	for _, d := range dirs {
		var s jobSpec
		readSpec(t, filepath.Join(d, "spec"), &s)
		out[filepath.Base(d)] = s
	}
	return out
}

// TestSpecs: every spec parses with only the keys BOSH knows, names its
// directory, lists templates and packages that exist, documents its
// properties; the release is named vigil.
func TestSpecs(t *testing.T) {
	var final struct {
		Name string `yaml:"name"`
	}
	readSpec(t, "config/final.yml", &final)
	if final.Name != "vigil" {
		t.Errorf("release name %q", final.Name)
	}
	pkgs := map[string]packageSpec{}
	dirs, _ := filepath.Glob("packages/*")
	for _, d := range dirs {
		var s packageSpec
		readSpec(t, filepath.Join(d, "spec"), &s)
		if s.Name != filepath.Base(d) || len(s.Files) == 0 {
			t.Errorf("%s: %+v", d, s)
		}
		if _, err := os.Stat(filepath.Join(d, "packaging")); err != nil {
			t.Error(err)
		}
		pkgs[s.Name] = s
	}
	for name, p := range pkgs {
		for _, dep := range p.Dependencies {
			if _, ok := pkgs[dep]; !ok {
				t.Errorf("package %s depends on %s, which the release lacks", name, dep)
			}
		}
	}
	all := jobs(t)
	if len(all) != 2 {
		t.Fatalf("jobs %v", slices.Sorted(maps.Keys(all)))
	}
	for dir, j := range all {
		if j.Name != dir {
			t.Errorf("job %s is named %s", dir, j.Name)
		}
		for src := range j.Templates {
			if _, err := os.Stat(filepath.Join("jobs", dir, "templates", src)); err != nil {
				t.Error(err)
			}
		}
		for _, p := range j.Packages {
			if _, ok := pkgs[p]; !ok {
				t.Errorf("job %s uses package %s, which the release lacks", dir, p)
			}
		}
		for name, def := range j.Properties {
			if d, _ := def["description"].(string); d == "" {
				t.Errorf("job %s: property %s has no description", dir, name)
			}
		}
		if b, err := os.ReadFile(filepath.Join("jobs", dir, "monit")); err != nil || len(b) != 0 {
			t.Errorf("job %s's monit file: %q %v (it runs no process of its own)", dir, b, err)
		}
	}
}

// TestBPMIsADropIn: the bpm job renders the files bpm-release's does, at
// the same places, so that a manifest only changes the job's release.
func TestBPMIsADropIn(t *testing.T) {
	j := jobs(t)["bpm"]
	dests := slices.Sorted(maps.Values(j.Templates))
	// bpm-release's jobs/bpm/spec: bpm: bin/bpm, setup.erb: bin/setup,
	// pre-start.erb: bin/pre-start; properties: {}.
	if want := []string{"bin/bpm", "bin/pre-start", "bin/setup"}; !slices.Equal(dests, want) || len(j.Properties) != 0 {
		t.Fatalf("bpm job renders %v with properties %v, want %v and none", dests, j.Properties, want)
	}
	wrapper := render(t, "bpm", "bpm", nil)
	if !strings.Contains(wrapper, "\nexec /var/vcap/packages/vigil/bin/bpm \"$@\"\n") || !strings.Contains(wrapper, "ulimit -n 524288") {
		t.Fatalf("bin/bpm:\n%s", wrapper)
	}
}

// TestTemplatesRender: every template renders with the job's defaults and
// with the properties set otherwise; scripts are valid shell; the
// renderer fails on a property the spec lacks, as the director does.
func TestTemplatesRender(t *testing.T) {
	for dir, j := range jobs(t) {
		for src, dest := range j.Templates {
			for _, props := range []map[string]any{nil, {"vigil": map[string]any{"supervisor": false}}} {
				out := render(t, dir, src, props)
				if strings.HasPrefix(out, "#!") {
					if b, err := exec.Command("bash", "-n", "-c", out).CombinedOutput(); err != nil {
						t.Errorf("%s %s (%v): not valid shell: %v %s", dir, dest, props, err, b)
					}
				}
				if strings.Contains(out, "<%") {
					t.Errorf("%s %s: ERB left in the output", dir, dest)
				}
			}
		}
	}
	if got := render(t, "vigil", "supervisor.erb", nil); got != "true\n" {
		t.Errorf("config/supervisor by default: %q", got)
	}
	if got := render(t, "vigil", "supervisor.erb", map[string]any{"vigil": map[string]any{"supervisor": false}}); got != "false\n" {
		t.Errorf("config/supervisor with vigil.supervisor false: %q", got)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "templates"), 0o755)
	os.WriteFile(filepath.Join(dir, "spec"), []byte("name: x\nproperties: {}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "templates", "t.erb"), []byte(`<%= p("nope") %>`), 0o644)
	out, err := renderCmd(dir, "t.erb", nil).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Can't find property 'nope'") {
		t.Errorf("an unknown property rendered: %v %s", err, out)
	}
}

// render renders jobs/JOB/templates/SRC with props over the spec's
// defaults.
func render(t *testing.T, job, src string, props map[string]any) string {
	t.Helper()
	if _, err := exec.LookPath("ruby"); err != nil {
		t.Skip("rendering BOSH templates needs ruby (Debian: ruby)")
	}
	out, err := renderCmd(filepath.Join("jobs", job), src, props).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("render %s/%s: %v %s", job, src, err, stderr)
	}
	return string(out)
}

func renderCmd(jobDir, src string, props map[string]any) *exec.Cmd {
	js, _ := json.Marshal(props)
	if props == nil {
		js = []byte("{}")
	}
	return exec.Command("ruby", "testdata/render.rb", jobDir, src, string(js))
}
