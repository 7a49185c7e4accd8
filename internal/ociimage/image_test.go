package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readArchive returns the archive's files by name.
func readArchive(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
}

// entry is one file of a layer.
type entry struct {
	hdr  *tar.Header
	body string
}

func readLayer(t *testing.T, b []byte) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		out[h.Name] = entry{h, string(body)}
	}
}

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// TestBuild: the archive holds both the OCI layout and docker-archive's
// manifest over the same blobs, the digests are those of the contents, the
// layers hold the base, vigil, bpm, the jobs (root:vcap, without sys) and a
// vcap user the base lacked, and the same inputs give the same bytes.
func TestBuild(t *testing.T) {
	root, base := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(root, "jobs", "web", "bin", "drain"), "#!/bin/sh\necho 0\n", 0o750)
	writeFile(t, filepath.Join(root, "jobs", "web", "config", "bpm.yml"), "processes: []\n", 0o640)
	writeFile(t, filepath.Join(root, "sys", "log", "web", "x.log"), "runtime\n", 0o644)
	writeFile(t, filepath.Join(base, "bin", "sh"), "not really a shell", 0o755)
	writeFile(t, filepath.Join(base, "etc", "passwd"), "root:x:0:0:root:/root:/bin/sh", 0o644)
	vigil := filepath.Join(t.TempDir(), "vigil")
	writeFile(t, vigil, "vigil's bytes", 0o755)
	build := func() []byte {
		var buf bytes.Buffer
		notes, err := Build(&buf, Options{Ref: "localhost/web:1", Root: root, Base: base, Vigil: vigil, Work: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(notes, "; ") != "added the vcap user (uid 1000) to /etc/passwd; added the vcap group (gid 1000) to /etc/group" {
			t.Fatalf("notes %q", notes)
		}
		return buf.Bytes()
	}
	img := build()
	if !bytes.Equal(img, build()) {
		t.Fatal("the same inputs gave another archive")
	}
	files := readArchive(t, img)
	var index struct {
		Manifests []descriptor
	}
	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	json.Unmarshal(files["index.json"], &index)
	json.Unmarshal(files["manifest.json"], &docker)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != "localhost/web:1" ||
		len(docker) != 1 || docker[0].RepoTags[0] != "localhost/web:1" || string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Fatalf("index %s\nmanifest.json %s", files["index.json"], files["manifest.json"])
	}
	for name, b := range files {
		if hexsum, ok := strings.CutPrefix(name, "blobs/sha256/"); ok && hexsum != "" {
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != hexsum {
				t.Errorf("blob %s holds other bytes", name)
			}
		}
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	json.Unmarshal(files[blobPath(index.Manifests[0].Digest)], &manifest)
	var conf struct {
		Config struct{ Cmd []string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	json.Unmarshal(files[docker[0].Config], &conf)
	if manifest.Config.Digest != "sha256:"+strings.TrimPrefix(docker[0].Config, "blobs/sha256/") || len(manifest.Layers) != 2 ||
		conf.RootFS.DiffIDs[0] != manifest.Layers[0].Digest || conf.RootFS.DiffIDs[1] != manifest.Layers[1].Digest ||
		strings.Join(conf.Config.Cmd, " ") != "/usr/local/bin/vigil container --root /var/vcap" {
		t.Fatalf("manifest %+v\nconfig %s", manifest, files[docker[0].Config])
	}
	baseLayer, top := readLayer(t, files[blobPath(manifest.Layers[0].Digest)]), readLayer(t, files[blobPath(manifest.Layers[1].Digest)])
	if baseLayer["bin/sh"].body != "not really a shell" {
		t.Errorf("base layer %v", baseLayer)
	}
	drain := top["var/vcap/jobs/web/bin/drain"]
	if top["usr/local/bin/vigil"].body != "vigil's bytes" || top["usr/local/bin/vigil"].hdr.Mode != 0o755 ||
		drain.hdr == nil || drain.hdr.Uid != 0 || drain.hdr.Gid != VcapGID || drain.hdr.Mode != 0o750 ||
		top["var/vcap/jobs/bpm/bin/bpm"].hdr.Linkname != VigilPath || top["var/vcap/sys/"].hdr.Mode != 0o775 ||
		top["var/vcap/"].hdr.Mode != 0o755 {
		t.Fatalf("top layer: %+v", top)
	}
	if _, ok := top["var/vcap/sys/log/web/x.log"]; ok {
		t.Error("the root's sys went into the image")
	}
	if top["etc/passwd"].body != "root:x:0:0:root:/root:/bin/sh\nvcap:x:1000:1000:BOSH System User:/home/vcap:/bin/sh\n" {
		t.Errorf("passwd %q", top["etc/passwd"].body)
	}
}

// TestInterpreter tells a dynamically linked program from a static one.
func TestInterpreter(t *testing.T) {
	for path, want := range map[string]string{"/bin/sh": "/lib", "/bin/busybox": ""} {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		got, err := Interpreter(path)
		if err != nil || !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%s: %q %v", path, got, err)
		}
	}
	if got, err := Interpreter("image_test.go"); got != "" || err != nil {
		t.Errorf("not an ELF file: %q %v", got, err)
	}
}

// TestBuildOnATarBase: a gzipped tar archive is a base too, its
// /etc/passwd read for vcap (there: nothing added); a vigil linked
// dynamically is refused without a base.
func TestBuildOnATarBase(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "jobs", "web", "bin", "drain"), "#!/bin/sh\necho 0\n", 0o755)
	var tb bytes.Buffer
	gz := gzip.NewWriter(&tb)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{"./etc/passwd": "root:x:0:0::/root:/bin/sh\nvcap:x:1000:1000::/home/vcap:/bin/sh\n",
		"./etc/group": "vcap:x:1000:\n", "./bin/sh": "a shell"} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	base := filepath.Join(t.TempDir(), "base.tar.gz")
	writeFile(t, base, tb.String(), 0o644)
	vigil := filepath.Join(t.TempDir(), "vigil")
	writeFile(t, vigil, "vigil's bytes", 0o755)
	var img bytes.Buffer
	notes, err := Build(&img, Options{Ref: "localhost/web:1", Root: root, Base: base, Vigil: vigil, Work: t.TempDir()})
	if err != nil || len(notes) != 0 {
		t.Fatalf("%v %q", err, notes)
	}
	files := readArchive(t, img.Bytes())
	var docker []struct{ Layers []string }
	json.Unmarshal(files["manifest.json"], &docker)
	baseLayer, top := readLayer(t, files[docker[0].Layers[0]]), readLayer(t, files[docker[0].Layers[1]])
	if baseLayer["bin/sh"].body != "a shell" || top["etc/passwd"].hdr != nil {
		t.Fatalf("base %v\ntop %v", baseLayer, top)
	}
	if _, err := os.Stat("/bin/sh"); err == nil {
		if interp, _ := Interpreter("/bin/sh"); interp != "" {
			_, err := Build(io.Discard, Options{Ref: "localhost/web:1", Root: root, Vigil: "/bin/sh", Work: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), "build vigil with CGO_ENABLED=0") {
				t.Fatalf("a dynamic vigil without a base: %v", err)
			}
		}
	}
}
