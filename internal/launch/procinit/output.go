package procinit

// outputReport is the EventOutput report: the bytes each stream has lost
// so far, and whether writes are failing now.
func (it *initProc) outputReport() Report {
	r := Report{Event: EventOutput}
	r.DroppedStdout, r.DroppedStderr = it.droppedCounts()
	r.Dropping = it.out.isDropping() || it.errw.isDropping()
	return r
}

// droppedCounts returns the bytes each copier has dropped.
func (it *initProc) droppedCounts() (stdout, stderr int64) {
	if it.out != nil {
		stdout = it.out.dropped.Load()
	}
	if it.errw != nil {
		stderr = it.errw.dropped.Load()
	}
	return stdout, stderr
}

// isDropping reports whether the copier's writes are failing now.
func (c *copier) isDropping() bool { return c != nil && c.dropping.Load() }
