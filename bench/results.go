package main

import (
	"math"
	"sync"
)

// cell is one table entry: V feeds the ratio column, Text is shown.
type cell struct {
	V    float64 // NaN when not numeric
	Text string
}

func secCell(s float64) cell { return cell{V: s, Text: fmtSec(s)} }
func kibCell(k float64) cell { return cell{V: k, Text: fmtKiB(k)} }

// results collects cells by metric key and supervisor. The background
// tests write concurrently, hence the mutex.
type results struct {
	mu    sync.Mutex
	cells map[string]map[string]cell
	notes []string
}

func newResults() *results { return &results{cells: map[string]map[string]cell{}} }

func (r *results) set(key, peer string, c cell) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cells[key] == nil {
		r.cells[key] = map[string]cell{}
	}
	r.cells[key][peer] = c
}

func (r *results) setErr(key, peer string, err error) {
	r.set(key, peer, cell{V: math.NaN(), Text: "error: " + tail(err.Error(), 140)})
}

func (r *results) get(key, peer string) (cell, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cells[key][peer]
	return c, ok
}

func (r *results) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, s)
}
