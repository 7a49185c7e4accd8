package job

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error is a
// *ConfigError or an ErrorList with sane lines, and that a job it accepts
// keeps the promises the rest of vigil relies on.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, warns, err := Parse(vcap, "web", "bpm.yml", data)
		for _, w := range warns {
			if w.Line < 0 {
				t.Errorf("warning with line %d: %v", w.Line, w)
			}
		}
		if err != nil {
			var list ErrorList
			var one *ConfigError
			switch {
			case errors.As(err, &list):
				if len(list) == 0 {
					t.Fatal("empty ErrorList")
				}
				for _, e := range list {
					if e.Line < 0 || e.File != "bpm.yml" {
						t.Errorf("bad error position: %q", e)
					}
				}
			case errors.As(err, &one):
			default:
				t.Fatalf("error %v is %T", err, err)
			}
			if j != nil {
				t.Error("job returned with an error")
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range j.Processes {
			if p.Name == "" || p.Executable == "" || !filepath.IsAbs(p.Workdir) || seen[p.Name] {
				t.Errorf("accepted an invalid process: %+v", p)
			}
			seen[p.Name] = true
			for _, v := range p.AdditionalVolumes {
				if !vcap.Contains(v.Path) || filepath.Clean(v.Path) != v.Path {
					t.Errorf("accepted volume %q", v.Path)
				}
			}
			if l := p.Logs; (l.MaxSize == 0) != (l.Keep == 0) || (l.MaxSize != 0 && (l.MaxSize < MinLogSize || l.Keep < 1 || l.Keep > MaxLogKeep)) {
				t.Errorf("accepted logs %+v", l)
			}
			if _, err := p.WithRunOverrides(vcap, nil, nil); err != nil {
				t.Errorf("a parsed process fails re-validation: %v", err)
			}
		}
	})
}
