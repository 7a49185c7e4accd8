// Package ociimage writes a container image without a container engine:
// layers as uncompressed tar streams, and one archive that both docker-
// archive readers (docker load, podman load: manifest.json) and OCI readers
// (ctr images import, skopeo: oci-layout, index.json) accept. Build makes
// vigil's image: a base root filesystem, vigil, and a BOSH root of rendered
// jobs at /var/vcap. Everything is written in a fixed order with fixed
// times, so the same inputs give the same digests.
package ociimage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// epoch is every entry's modification time: the same inputs, the same
// digests.
var epoch = time.Unix(0, 0).UTC()

// Layer is one finished layer: an uncompressed tar file and its digest
// (which is also its diff id).
type Layer struct {
	Path   string
	Digest string // sha256:HEX
	Size   int64
}

// LayerWriter writes one layer to a file. Entries must be added parents
// first; a path added twice is written twice (the later one wins when the
// layer is applied).
type LayerWriter struct {
	f     *os.File
	sum   hash.Hash
	count *countWriter
	tw    *tar.Writer
	seen  map[string]bool // directories written
	// etc holds /etc/passwd and /etc/group as this layer last wrote them.
	etc map[string][]byte
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// NewLayer starts a layer in a new file in dir.
func NewLayer(dir string) (*LayerWriter, error) {
	f, err := os.CreateTemp(dir, "layer-*.tar")
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	lw := &LayerWriter{f: f, sum: sha256.New(), seen: map[string]bool{}, etc: map[string][]byte{}}
	lw.count = &countWriter{w: io.MultiWriter(f, lw.sum)}
	lw.tw = tar.NewWriter(lw.count)
	return lw, nil
}

// clean makes p a path inside the image: relative, slash-separated, with
// no way out of the root.
func clean(p string) string {
	return strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(p)), "/")
}

// Mkdir adds a directory (and, with root's ownership and mode 0755, the
// parents not yet added).
func (lw *LayerWriter) Mkdir(name string, mode fs.FileMode, uid, gid int) error {
	name = clean(name)
	if err := lw.parents(name); err != nil {
		return err
	}
	lw.seen[name] = true
	return lw.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(mode.Perm() | mode&fs.ModeSticky),
		Uid: uid, Gid: gid, ModTime: epoch, Format: tar.FormatPAX})
}

// parents adds the directories above name that this layer has not added.
func (lw *LayerWriter) parents(name string) error {
	dir := path.Dir(name)
	if dir == "." || lw.seen[dir] {
		return nil
	}
	return lw.Mkdir(dir, 0o755, 0, 0)
}

// File adds a regular file with the contents of r (size bytes).
func (lw *LayerWriter) File(name string, mode fs.FileMode, uid, gid int, size int64, r io.Reader) error {
	name = clean(name)
	if err := lw.parents(name); err != nil {
		return err
	}
	if err := lw.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(mode.Perm()), Size: size,
		Uid: uid, Gid: gid, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if name == "etc/passwd" || name == "etc/group" {
		var b bytes.Buffer
		r = io.TeeReader(r, &b)
		defer func() { lw.etc[name] = b.Bytes() }()
	}
	_, err := io.Copy(lw.tw, r)
	return err
}

// Bytes adds a regular file holding b.
func (lw *LayerWriter) Bytes(name string, mode fs.FileMode, uid, gid int, b []byte) error {
	return lw.File(name, mode, uid, gid, int64(len(b)), bytes.NewReader(b))
}

// Symlink adds a symbolic link to target.
func (lw *LayerWriter) Symlink(name, target string) error {
	name = clean(name)
	if err := lw.parents(name); err != nil {
		return err
	}
	return lw.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777,
		ModTime: epoch, Format: tar.FormatPAX})
}

// Owner gives the owner of an entry a directory tree brings into the
// image, from its path inside the image and the host file's owner.
type Owner func(name string, uid, gid int) (int, int)

// Tree adds what the host directory src holds below the image's dir (dir
// itself is the caller's to add): directories, regular files and symbolic
// links (kept as they are, never followed); sockets, FIFOs and devices are
// left out. skip, when it
// returns true for a path inside the image, leaves it (and what lies
// below it) out.
func (lw *LayerWriter) Tree(src, dir string, owner Owner, skip func(name string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		name := clean(path.Join(dir, filepath.ToSlash(rel)))
		if skip != nil && rel != "." && skip(name) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		uid, gid := 0, 0
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(st.Uid), int(st.Gid)
		}
		if owner != nil {
			uid, gid = owner(name, uid, gid)
		}
		switch {
		case fi.IsDir():
			if rel == "." {
				return nil // the caller's to add, with its own mode
			}
			return lw.Mkdir(name, fi.Mode(), uid, gid)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return lw.Symlink(name, target)
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return lw.File(name, fi.Mode(), uid, gid, fi.Size(), f)
		}
		return nil
	})
}

// Tar copies a root filesystem from a tar stream (gzipped or not), as
// `docker export` or a distribution's base tarball gives it.
func (lw *LayerWriter) Tar(r io.Reader) error {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	} else {
		r = br
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("base tar: %w", err)
		}
		h.Name = clean(h.Name)
		if h.Name == "" {
			continue
		}
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
			lw.seen[strings.TrimSuffix(h.Name, "/")] = true
		}
		if h.Typeflag == tar.TypeLink {
			h.Linkname = clean(h.Linkname)
		}
		if err := lw.tw.WriteHeader(h); err != nil {
			return err
		}
		var body io.Reader = tr
		if h.Name == "etc/passwd" || h.Name == "etc/group" {
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			lw.etc[h.Name], body = b, bytes.NewReader(b)
		}
		if _, err := io.Copy(lw.tw, body); err != nil {
			return err
		}
	}
}

// Etc returns /etc/passwd or /etc/group as this layer wrote it, nil when
// it did not.
func (lw *LayerWriter) Etc(name string) []byte { return lw.etc[clean(name)] }

// Close finishes the layer.
func (lw *LayerWriter) Close() (Layer, error) {
	err := lw.tw.Close()
	if cerr := lw.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Layer{}, fmt.Errorf("layer: %w", err)
	}
	return Layer{Path: lw.f.Name(), Digest: "sha256:" + hex.EncodeToString(lw.sum.Sum(nil)), Size: lw.count.n}, nil
}
