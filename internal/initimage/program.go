package initimage

import (
	"fmt"
	"os"
)

// Program is the program a supervisor executes as its per-process init:
// the embedded image, or vigil's own binary where there is none.
type Program struct {
	Path     string // for execve, in this process and its children until they exec
	Fallback error  // why vigil itself is the init (nil when the image is)
	image    *Image
}

// Resolve opens the embedded image, or falls back to vigil's own binary,
// which runs as the init when its first argument is "init" (it behaves
// the same and costs more). Its error is only for a binary it cannot find.
// The caller closes the Program once it starts no more inits.
func Resolve() (*Program, error) {
	im, err := Open()
	if err == nil {
		return &Program{Path: im.Path(), image: im}, nil
	}
	self, serr := os.Executable()
	if serr != nil {
		return nil, fmt.Errorf("find the per-process init: %w (and own binary: %w)", err, serr)
	}
	return &Program{Path: self, Fallback: err}, nil
}

// Close releases the image, if the Program has one.
func (p *Program) Close() error {
	if p.image == nil {
		return nil
	}
	return p.image.Close()
}
