//go:build conformance

package boshagent

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Deployment is what a deploy sends the agent: the blobs it uploads
// (blobstore id → bytes) and the apply spec that names them.
type Deployment struct {
	Blobs map[string][]byte
	Spec  map[string]any
}

// file is one entry of a tarball.
type file struct {
	name, link string
	mode       int64
	body       []byte
}

// NewDeployment builds the deploy of one instance holding vigil's
// release (jobs bpm and vigil, from repo's release/, rendered with
// vigilProps as the director renders them, and the vigil package compiled
// as its packaging installs it: bin/vigil is the vigil binary given,
// bin/bpm and bin/monit links to it, stemcell/ the two units) and the
// stand-in job from standinDir, on network (the settings' network, which
// the director repeats in the spec).
func NewDeployment(repo, vigilBin, standinDir string, vigilProps, network map[string]any) (Deployment, error) {
	rel := filepath.Join(repo, "release")
	var rendered []file
	for _, j := range []struct{ name, dir string }{{"bpm", filepath.Join(rel, "jobs", "bpm")},
		{"vigil", filepath.Join(rel, "jobs", "vigil")}, {"standin", standinDir}} {
		files, err := renderJob(rel, j.dir, j.name, vigilProps)
		if err != nil {
			return Deployment{}, err
		}
		rendered = append(rendered, files...)
	}
	archive, err := tgz(rendered)
	if err != nil {
		return Deployment{}, err
	}
	pkg, err := compiledVigil(repo, vigilBin)
	if err != nil {
		return Deployment{}, err
	}
	d := Deployment{Blobs: map[string][]byte{"rendered-templates": archive, "vigil-package": pkg}}
	var templates []any
	for _, name := range []string{"bpm", "vigil", "standin"} {
		templates = append(templates, map[string]any{"name": name, "version": "conformance-1",
			"sha1": digest(archive), "blobstore_id": "unused-" + name})
	}
	d.Spec = map[string]any{
		"deployment": "vigil-conformance", "name": "agent-rig", "index": 0, "az": "z1",
		"id":                         "6a1f0c52-0000-4000-8000-00000000c0de",
		"job":                        map[string]any{"name": "agent-rig", "templates": templates},
		"packages":                   map[string]any{"vigil": map[string]any{"name": "vigil", "version": "conformance-1", "sha1": digest(pkg), "blobstore_id": "vigil-package"}},
		"networks":                   map[string]any{"default": network},
		"rendered_templates_archive": map[string]any{"blobstore_id": "rendered-templates", "sha1": digest(archive)},
		"configuration_hash":         "conformance-" + digest(archive)[:12],
		"properties":                 map[string]any{"logging": map[string]any{"max_log_file_size": ""}},
	}
	return d, nil
}

func digest(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

// renderJob renders a job's templates with release/testdata/render.rb
// (Ruby's ERB, as the director) into JOB/DEST entries, its monit file
// beside them.
func renderJob(rel, dir, name string, props map[string]any) ([]file, error) {
	b, err := os.ReadFile(filepath.Join(dir, "spec"))
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", name, err)
	}
	var spec struct {
		Templates map[string]string `yaml:"templates"`
	}
	if err := yaml.Unmarshal(b, &spec); err != nil {
		return nil, fmt.Errorf("job %s spec: %w", name, err)
	}
	js, _ := json.Marshal(props)
	monit, err := os.ReadFile(filepath.Join(dir, "monit"))
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", name, err)
	}
	out := []file{{name: name + "/monit", mode: 0o644, body: monit}}
	for src, dest := range spec.Templates {
		cmd := exec.Command("ruby", filepath.Join(rel, "testdata", "render.rb"), dir, src, string(js))
		text, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("render %s/%s: %w %s", name, src, err, stderrOf(err))
		}
		mode := int64(0o644)
		if strings.HasPrefix(dest, "bin/") {
			mode = 0o755
		}
		out = append(out, file{name: name + "/" + dest, mode: mode, body: text})
	}
	return out, nil
}

// compiledVigil is the vigil package as release/packages/vigil/packaging
// installs it.
func compiledVigil(repo, vigilBin string) ([]byte, error) {
	bin, err := os.ReadFile(vigilBin)
	if err != nil {
		return nil, fmt.Errorf("vigil package: %w", err)
	}
	files := []file{{name: "bin/vigil", mode: 0o755, body: bin},
		{name: "bin/bpm", link: "vigil"}, {name: "bin/monit", link: "vigil"}}
	for _, u := range []string{"vigil.service", "monit.service"} {
		b, err := os.ReadFile(filepath.Join(repo, "internal", "stemcell", u))
		if err != nil {
			return nil, fmt.Errorf("vigil package: %w", err)
		}
		files = append(files, file{name: "stemcell/" + u, mode: 0o644, body: b})
	}
	return tgz(files)
}

// tgz writes files (and their parent directories) as a gzipped tarball
// with fixed times and owners, in name order.
func tgz(files []file) ([]byte, error) {
	slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	when := time.Unix(0, 0)
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	slices.Sort(names)
	for _, d := range names {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "./" + d + "/", Mode: 0o755, ModTime: when}); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: "./" + f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: when}
		if f.link != "" {
			h = &tar.Header{Typeflag: tar.TypeSymlink, Name: "./" + f.name, Linkname: f.link, Mode: 0o777, ModTime: when}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
