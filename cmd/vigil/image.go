package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/vigil-bosh/vigil/internal/ociimage"
)

// defineImage writes a container image of vigil and the root's jobs.
func defineImage(c *command) func([]string) error {
	output := c.String("output,o", "", "write the image archive to `FILE` (docker load, podman load, ctr images import, skopeo)")
	c.completes(completeFile)
	base := c.String("base", "", "the image's root filesystem: a `DIR`, or a tar archive (gzipped or not) such as docker export or a distribution's base tarball")
	c.completes(completeFile)
	bin := c.String("vigil", "", "the vigil binary to put in the image (`PATH`; default: this one)")
	c.completes(completeFile)
	return func(pos []string) error {
		if *output == "" {
			return c.usagef("needs --output FILE")
		}
		l, err := c.layout()
		if err != nil {
			return err
		}
		if *bin == "" {
			if *bin, err = ownBinary(); err != nil {
				return err
			}
		}
		out, err := os.CreateTemp(filepath.Dir(*output), ".vigil-image-*")
		if err != nil {
			return err
		}
		defer os.Remove(out.Name())
		notes, err := ociimage.Build(out, ociimage.Options{Ref: pos[0], Root: l.Root(), Base: *base, Vigil: *bin,
			Work: filepath.Dir(out.Name())})
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := os.Rename(out.Name(), *output); err != nil {
			return fmt.Errorf("image: %w", err)
		}
		for _, n := range notes {
			fmt.Fprintln(os.Stderr, "note:", n)
		}
		fmt.Printf("%s: %s\n", *output, pos[0])
		return nil
	}
}
