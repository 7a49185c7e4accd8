package ociimage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The image's fixed places and identity.
const (
	VigilPath = "/usr/local/bin/vigil"
	BOSHRoot  = "/var/vcap"
	// VcapUID and VcapGID are the stemcells' vcap user, which Build adds to
	// an image that lacks it.
	VcapUID = 1000
	VcapGID = 1000
)

// Options configure Build.
type Options struct {
	Ref string // NAME:TAG
	// Root is a BOSH root of rendered jobs on this machine (jobs/,
	// packages/, data/...), copied to /var/vcap without its sys/ and store/
	// (what runs makes those) nor data/sys and data/vigil.
	Root string
	// Base is a root filesystem for the image: a directory, or a tar
	// archive (gzipped or not) such as `docker export` or a distribution's
	// base tarball writes; "" for none (vigil and the jobs alone, which is
	// enough only for jobs that need no shell or libraries).
	Base  string
	Vigil string // the vigil binary to put in the image
	Work  string // a directory for the layers while the image is written
	// Cmd is the image's command; nil is vigil container on /var/vcap.
	Cmd []string
}

// Build writes the image: a layer for the base, then one with vigil at
// /usr/local/bin/vigil (and as /var/vcap/jobs/bpm/bin/bpm, where drain
// scripts call bpm), the jobs at /var/vcap (root:vcap, as a BOSH VM has
// them), /var/vcap/sys, data and store writable by vcap, and /etc/passwd
// and /etc/group with a vcap user when the base lacks one. The notes say
// what Build added that the inputs lacked.
func Build(w io.Writer, o Options) (notes []string, err error) {
	if o.Ref == "" || o.Root == "" || o.Vigil == "" {
		return nil, fmt.Errorf("image: a name, a BOSH root and a vigil binary are needed")
	}
	if fi, err := os.Stat(filepath.Join(o.Root, "jobs")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("image: %s is not a BOSH root: no jobs directory", o.Root)
	}
	var layers []Layer
	var passwd, group []byte
	if o.Base != "" {
		l, p, g, err := baseLayer(o.Work, o.Base)
		if err != nil {
			return nil, err
		}
		layers, passwd, group = append(layers, l), p, g
	}
	top, err := NewLayer(o.Work)
	if err != nil {
		return nil, err
	}
	defer os.Remove(top.f.Name())
	if o.Base == "" {
		if err := top.Mkdir("tmp", 0o777|os.ModeSticky, 0, 0); err != nil {
			return nil, err
		}
		notes = append(notes, "no base: the image holds vigil and the jobs only (no shell, no libraries)")
	}
	interp, err := Interpreter(o.Vigil)
	switch {
	case err != nil:
		return nil, fmt.Errorf("image: %w", err)
	case interp != "" && o.Base == "":
		return nil, fmt.Errorf("image: %s is linked dynamically (it needs %s) and there is no base to hold its libraries: build vigil with CGO_ENABLED=0", o.Vigil, interp)
	case interp != "":
		notes = append(notes, fmt.Sprintf("%s is linked dynamically (it needs %s): the base must hold its libraries (CGO_ENABLED=0 builds a static vigil)", o.Vigil, interp))
	}
	f, err := os.Open(o.Vigil)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := top.File(VigilPath, 0o755, 0, 0, fi.Size(), f); err != nil {
		return nil, err
	}
	if err := jobsTree(top, o.Root); err != nil {
		return nil, err
	}
	etcNotes, err := addVcap(top, passwd, group)
	if err != nil {
		return nil, err
	}
	notes = append(notes, etcNotes...)
	l, err := top.Close()
	if err != nil {
		return nil, err
	}
	layers = append(layers, l)
	cmd := o.Cmd
	if cmd == nil {
		cmd = []string{VigilPath, "container", "--root", BOSHRoot}
	}
	cfg := Config{Cmd: cmd, Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, WorkingDir: "/"}
	return notes, Write(w, o.Ref, cfg, layers)
}

// baseLayer copies the base root filesystem into a layer and returns its
// /etc/passwd and /etc/group.
func baseLayer(work, base string) (Layer, []byte, []byte, error) {
	lw, err := NewLayer(work)
	if err != nil {
		return Layer{}, nil, nil, err
	}
	fi, err := os.Stat(base)
	switch {
	case err != nil:
	case fi.IsDir():
		err = lw.Tree(base, "", nil, nil)
	default:
		var f *os.File
		if f, err = os.Open(base); err == nil {
			err = lw.Tar(f)
			f.Close()
		}
	}
	l, cerr := lw.Close()
	if err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(lw.f.Name())
		return Layer{}, nil, nil, fmt.Errorf("image: base %s: %w", base, err)
	}
	return l, lw.Etc("etc/passwd"), lw.Etc("etc/group"), nil
}

// jobsTree adds the BOSH root: the jobs as root:vcap, the directories
// what runs writes into as vcap's, and bpm where drain scripts look.
func jobsTree(lw *LayerWriter, root string) error {
	inside := strings.TrimPrefix(BOSHRoot, "/")
	if err := lw.Mkdir(inside, 0o755, 0, 0); err != nil {
		return err
	}
	skip := func(name string) bool {
		switch strings.TrimPrefix(name, inside+"/") {
		case "sys", "store", "data/sys", "data/vigil":
			return true
		}
		return false
	}
	owner := func(string, int, int) (int, int) { return 0, VcapGID }
	if err := lw.Tree(root, inside, owner, skip); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	for _, d := range []string{"sys", "data", "store"} {
		if err := lw.Mkdir(inside+"/"+d, 0o775, 0, VcapGID); err != nil {
			return err
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "jobs", "bpm", "bin", "bpm")); err == nil {
		return nil // the root brings its own
	}
	return lw.Symlink(inside+"/jobs/bpm/bin/bpm", VigilPath)
}

// addVcap writes /etc/passwd and /etc/group with the vcap user and group
// added where the base's lack them (root's and nobody's too, without a
// base's files).
func addVcap(lw *LayerWriter, passwd, group []byte) ([]string, error) {
	var notes []string
	if !hasEntry(passwd, "vcap") {
		if passwd == nil {
			passwd = []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
		}
		passwd = appendLine(passwd, fmt.Sprintf("vcap:x:%d:%d:BOSH System User:/home/vcap:/bin/sh", VcapUID, VcapGID))
		notes = append(notes, fmt.Sprintf("added the vcap user (uid %d) to /etc/passwd", VcapUID))
	}
	if !hasEntry(group, "vcap") {
		if group == nil {
			group = []byte("root:x:0:\nnogroup:x:65534:\n")
		}
		group = appendLine(group, fmt.Sprintf("vcap:x:%d:", VcapGID))
		notes = append(notes, fmt.Sprintf("added the vcap group (gid %d) to /etc/group", VcapGID))
	}
	if len(notes) == 0 {
		return nil, nil
	}
	if err := lw.Bytes("etc/passwd", 0o644, 0, 0, passwd); err != nil {
		return nil, err
	}
	return notes, lw.Bytes("etc/group", 0o644, 0, 0, group)
}

// hasEntry reports whether a passwd or group file has name.
func hasEntry(file []byte, name string) bool {
	for line := range bytes.Lines(file) {
		if n, _, ok := bytes.Cut(line, []byte(":")); ok && string(n) == name {
			return true
		}
	}
	return false
}

func appendLine(file []byte, line string) []byte {
	if len(file) > 0 && file[len(file)-1] != '\n' {
		file = append(file, '\n')
	}
	return append(file, line+"\n"...)
}

// Interpreter is the dynamic loader an ELF executable asks for (PT_INTERP),
// "" for a static one (vigil built with CGO_ENABLED=0) or what is not a
// 64-bit little-endian ELF file.
func Interpreter(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hdr := make([]byte, 64)
	if _, err := io.ReadFull(f, hdr); err != nil || string(hdr[:4]) != "\x7fELF" || hdr[4] != 2 || hdr[5] != 1 {
		return "", nil
	}
	le := binary.LittleEndian
	phoff, phentsize, phnum := int64(le.Uint64(hdr[0x20:])), int64(le.Uint16(hdr[0x36:])), int(le.Uint16(hdr[0x38:]))
	ph := make([]byte, 56)
	for i := range phnum {
		if _, err := f.ReadAt(ph, phoff+int64(i)*phentsize); err != nil {
			return "", err
		}
		if le.Uint32(ph) != 3 { // PT_INTERP
			continue
		}
		size := le.Uint64(ph[32:])
		if size > 4096 {
			return "", fmt.Errorf("%s: an interpreter path of %d bytes", path, size)
		}
		name := make([]byte, size)
		if _, err := f.ReadAt(name, int64(le.Uint64(ph[8:]))); err != nil {
			return "", err
		}
		return string(bytes.TrimRight(name, "\x00")), nil
	}
	return "", nil
}
