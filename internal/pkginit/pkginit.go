// Package pkginit keeps a vigil process from initialising packages it will
// never use. Go runs the initialisation of every package linked into a
// binary, whichever command the process runs; vigil is one binary, so each
// per-process init and each `vigil status` would otherwise build the
// Prometheus client's default registry, protobuf's descriptors, the
// daemon's tables and the rest, none of which they touch (GODEBUG=inittrace=1
// shows it: 2.6 ms and 377 KB per process before this package).
//
// Linked into cmd/vigil, pkginit's own initialisation runs before those
// packages' (the language orders package initialisation by import path
// among the packages whose imports are done; pkginit imports only the
// runtime, os and errors, which every one of those packages waits for
// too, and a test checks the order). It classifies the process from its
// arguments and marks the initialisation of each package the process
// cannot use as done, so that the runtime skips it:
//
//   - "vigil init" (the per-process init and its sandbox helper): every
//     package of the module graph outside procinit's own imports;
//   - any other command that cannot serve /metrics (everything but
//     `vigil demo` and a command with an --http flag): the metrics library
//     (the Prometheus client, protobuf and what only they bring in).
//
// Standard-library packages are never skipped: the linker refuses
// references to their initialisation records. The list of packages is
// tasks.go, checked against `go list` by this package's tests (`go test
// ./internal/pkginit -update` rewrites it). Skipping is safe because code
// can only reach a package through imports: the init's code imports none of
// the packages it skips, and only package metrics imports the metrics
// library, which refuses to run where it was skipped (Require).
//
// The record the runtime keeps of a package's initialisation is internal to
// it; its layout (a 32-bit state first, 2 meaning done) is the one of Go
// 1.21 to 1.26. Built with any other Go version, nothing is skipped.
package pkginit

import (
	"errors"
	"os"
	"runtime"
	_ "unsafe" // for go:linkname in tasks.go
)

// initTask is the head of the runtime's record of a package's
// initialisation (runtime.initTask): state is 0 before, 1 during, 2 after.
type initTask struct {
	state uint32
	nfns  uint32
}

// group is a set of packages skipped together.
type group uint8

const (
	metricsLib group = 1 << iota // the Prometheus client and what only it brings in
	daemonSide                   // the rest of vigil outside the per-process init
)

// task names one package's initialisation record.
type task struct {
	path  string
	group group
	rec   *initTask
}

// skipped is what this process's initialisation left out. It is written
// once, by init, before any other vigil package runs, and only read after.
var skipped group

func init() { skipped = skip(tasks(), os.Args, runtime.Version()) }

// skip marks as done the records of the groups the process with args does
// not need, when the runtime is one whose layout is known, and returns the
// groups it marked. A record already started or done is left alone.
func skip(ts []task, args []string, version string) group {
	want := unneeded(args)
	if want == 0 || !layoutKnown(version) {
		return 0
	}
	var done group
	for _, t := range ts {
		if t.group&want != 0 && t.rec.state == 0 {
			t.rec.state = 2
			done |= t.group
		}
	}
	return done
}

// unneeded returns the groups a process started with args never uses. A
// test binary (cmd/vigil's tests link package main) skips nothing: its
// tests use what they like.
func unneeded(args []string) group {
	if len(args) == 0 || hasSuffix(args[0], ".test") {
		return 0
	}
	if len(args) > 1 && args[1] == "init" {
		return metricsLib | daemonSide
	}
	for _, a := range args[1:] {
		if a == "demo" || hasPrefix(a, "-http") || hasPrefix(a, "--http") {
			return 0 // may serve /metrics
		}
	}
	return metricsLib
}

// layoutKnown reports whether version (runtime.Version()) is a Go release
// whose initialisation record starts with the state skip writes.
func layoutKnown(version string) bool {
	if !hasPrefix(version, "go1.") {
		return false // a development build: unknown layout
	}
	minor := 0
	for _, c := range version[len("go1."):] {
		if c < '0' || c > '9' {
			break
		}
		minor = minor*10 + int(c-'0')
	}
	return minor >= 21 && minor <= 26
}

// hasPrefix is strings.HasPrefix, which pkginit does not import (see the
// package comment).
func hasPrefix(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// hasSuffix is strings.HasSuffix.
func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// Require returns an error when the metrics library was left uninitialised
// in this process, i.e. when the arguments were judged not to serve
// /metrics; the metrics package calls it before it builds anything.
func Require() error {
	if skipped&metricsLib != 0 {
		return errors.New("the metrics library was not initialised in this process: its arguments do not serve /metrics")
	}
	return nil
}
