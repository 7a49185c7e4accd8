// Package atomicfile replaces files whole: a reader sees the old content or
// the new, never a part, and a symlink planted at the path is replaced,
// never followed.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path by data with mode perm. It writes a new file of its
// own (O_EXCL, so nothing planted under the temporary name is opened) in
// path's directory and renames it over path; on an error nothing is left
// behind and path is as it was. The directory must exist.
func Write(path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // CreateTemp made it 0600
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
