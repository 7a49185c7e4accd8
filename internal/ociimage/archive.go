package ociimage

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// The media types the archive's OCI side uses.
const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// Config is what the image runs, as its configuration says.
type Config struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
	Labels     map[string]string
	// Arch is the image's architecture (GOARCH's names); "" is this
	// program's.
	Arch string
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Write writes the image ref (NAME:TAG, e.g. localhost/router:1) made of
// layers, bottom first, with cfg, as one tar archive to w: the OCI image
// layout (oci-layout, index.json, blobs/sha256/...) and docker-archive's
// manifest.json over the same blobs.
func Write(w io.Writer, ref string, cfg Config, layers []Layer) error {
	if !strings.Contains(ref, ":") || strings.HasSuffix(ref, ":") {
		return fmt.Errorf("image name %q: want NAME:TAG", ref)
	}
	arch := cfg.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	type imageConfig struct {
		Entrypoint []string          `json:"Entrypoint,omitempty"`
		Cmd        []string          `json:"Cmd,omitempty"`
		Env        []string          `json:"Env,omitempty"`
		WorkingDir string            `json:"WorkingDir,omitempty"`
		User       string            `json:"User,omitempty"`
		Labels     map[string]string `json:"Labels,omitempty"`
	}
	type history struct {
		Created   string `json:"created"`
		CreatedBy string `json:"created_by"`
	}
	conf := struct {
		Created      string      `json:"created"`
		Architecture string      `json:"architecture"`
		OS           string      `json:"os"`
		Config       imageConfig `json:"config"`
		RootFS       struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
		History []history `json:"history"`
	}{Created: epoch.Format("2006-01-02T15:04:05Z"), Architecture: arch, OS: "linux",
		Config: imageConfig{cfg.Entrypoint, cfg.Cmd, cfg.Env, cfg.WorkingDir, cfg.User, cfg.Labels}}
	conf.RootFS.Type = "layers"
	manifest := struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{SchemaVersion: 2, MediaType: mediaManifest}
	var layerPaths []string
	for _, l := range layers {
		conf.RootFS.DiffIDs = append(conf.RootFS.DiffIDs, l.Digest)
		conf.History = append(conf.History, history{Created: conf.Created, CreatedBy: "vigil image"})
		manifest.Layers = append(manifest.Layers, descriptor{MediaType: mediaLayer, Digest: l.Digest, Size: l.Size})
		layerPaths = append(layerPaths, blobPath(l.Digest))
	}
	confJSON, err := json.Marshal(conf)
	if err != nil {
		return err
	}
	manifest.Config = descriptorOf(mediaConfig, confJSON)
	manifestJSON, err := json.Marshal(manifest)
	if err != nil {
		return err
	}
	md := descriptorOf(mediaManifest, manifestJSON)
	md.Annotations = map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref[strings.LastIndex(ref, ":")+1:]}
	index, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}{2, mediaIndex, []descriptor{md}})
	if err != nil {
		return err
	}
	docker, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{blobPath(manifest.Config.Digest), []string{ref}, layerPaths}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	for _, l := range layers {
		if err := copyBlob(tw, l); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{
		{blobPath(manifest.Config.Digest), confJSON},
		{blobPath(md.Digest), manifestJSON},
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{"manifest.json", docker},
	} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.b)), ModTime: epoch}); err != nil {
			return err
		}
		if _, err := tw.Write(f.b); err != nil {
			return err
		}
	}
	return tw.Close()
}

func blobPath(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }

func descriptorOf(mediaType string, b []byte) descriptor {
	sum := sha256.Sum256(b)
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(b))}
}

// copyBlob writes a layer's file into the archive as its blob.
func copyBlob(tw *tar.Writer, l Layer) error {
	f, err := os.Open(l.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: blobPath(l.Digest), Mode: 0o644, Size: l.Size, ModTime: epoch}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
