package demo

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-bosh/vigil/job"
)

func TestSetupRendersValidJobs(t *testing.T) {
	tests := []struct {
		name     string
		web      func(dir string) string
		wantJobs []string
	}{
		{"without the web binary", func(string) string { return "" }, []string{"flaky", "worker"}},
		{"with the web binary", func(dir string) string {
			p := filepath.Join(dir, "web")
			os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
			return p
		}, []string{"flaky", "web", "worker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r, err := Setup(dir, tt.web(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			jobs, warns, errs := job.LoadAll(r.Layout, nil)
			if len(errs) > 0 || len(warns) > 0 {
				t.Fatalf("examples do not load cleanly: %v %v", errs, warns)
			}
			var names []string
			for _, j := range jobs {
				names = append(names, j.Name)
				for _, p := range j.Processes {
					if !strings.HasPrefix(p.ResolvedExecutable, dir) {
						t.Errorf("%s/%s runs %s, outside the demo root", j.Name, p.Name, p.ResolvedExecutable)
					}
				}
			}
			if !slices.Equal(names, tt.wantJobs) {
				t.Fatalf("jobs %v, want %v", names, tt.wantJobs)
			}
			if (len(r.Skipped) == 0) != slices.Contains(names, "web") || r.Web != slices.Contains(names, "web") {
				t.Fatalf("skipped %v", r.Skipped)
			}
			if slices.Contains(names, "web") {
				b, _ := os.ReadFile(r.Layout.BPMConfig("web"))
				if !strings.Contains(string(b), strconv.Itoa(r.WebPort)) || strings.Contains(string(b), "/var/vcap") {
					t.Fatalf("web bpm.yml not rendered:\n%s", b)
				}
			}
		})
	}
}
