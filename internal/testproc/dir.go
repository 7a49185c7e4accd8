package testproc

import "os"

// makeShortDir makes a directory with a short path: unix socket paths are
// limited to about 100 bytes, and test temp dirs can be longer.
func makeShortDir() (string, error) { return os.MkdirTemp("", "tp") }

func removeDir(dir string) { os.RemoveAll(dir) }
