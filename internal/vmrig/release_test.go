package vmrig

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// renderRelease puts the BOSH release's stemcell side into the share for
// the stemcell-release scenario: release/on and release/off hold every
// template of every job, rendered as the director renders them
// (release/testdata/render.rb, Ruby's ERB) with vigil.supervisor true and
// false, at jobs/JOB/DEST; release/stemcell holds the units the vigil
// package installs (internal/stemcell), as its packaging copies them.
func renderRelease(t *testing.T, share string) {
	if _, err := exec.LookPath("ruby"); err != nil {
		t.Fatal("vmrig: rendering the BOSH release's templates needs ruby (apt-get install ruby; .ci/run installs it)")
	}
	root := moduleRoot(t)
	rel := filepath.Join(root, "release")
	specs, err := filepath.Glob(filepath.Join(rel, "jobs", "*", "spec"))
	if err != nil || len(specs) == 0 {
		t.Fatalf("vmrig: no job specs in %s: %v", rel, err)
	}
	out := filepath.Join(share, "release")
	for variant, props := range map[string]string{"on": "{}", "off": `{"vigil":{"supervisor":false}}`} {
		for _, spec := range specs {
			b, err := os.ReadFile(spec)
			if err != nil {
				t.Fatal(err)
			}
			var js struct {
				Templates map[string]string `yaml:"templates"`
			}
			if err := yaml.Unmarshal(b, &js); err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			job := filepath.Base(filepath.Dir(spec))
			for src, dest := range js.Templates {
				cmd := exec.Command("ruby", "testdata/render.rb", filepath.Join("jobs", job), src, props)
				cmd.Dir = rel
				text, err := cmd.Output()
				if err != nil {
					t.Fatalf("render %s/%s: %v", job, src, err)
				}
				writeFile(t, filepath.Join(out, variant, "jobs", job, dest), text, 0o755)
			}
		}
	}
	for _, u := range []string{"vigil.service", "monit.service"} {
		b, err := os.ReadFile(filepath.Join(root, "internal", "stemcell", u))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(out, "stemcell", u), b, 0o644)
	}
}

func writeFile(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}
