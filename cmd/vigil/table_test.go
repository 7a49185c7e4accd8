package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/control"
)

func TestStatusTableHealth(t *testing.T) {
	now := time.Now()
	st := control.Status{Processes: []control.ProcessStatus{
		{Job: "web", Process: "a", State: "running", Health: "healthy", Ready: true, Since: now},
		{Job: "web", Process: "b", State: "running", Health: "starting", Since: now},
		{Job: "web", Process: "c", State: "running", Ready: true, Since: now},
		{Job: "web", Process: "d", State: "backoff"},
	}}
	var b strings.Builder
	writeStatus(&b, st, false)
	lines := strings.Split(b.String(), "\n")
	want := []string{"HEALTH", "healthy,ready", "starting,not-ready", " ready ", " - "}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d %q lacks %q", i, lines[i], w)
		}
	}
}

func TestStatusTableUsage(t *testing.T) {
	now := time.Now()
	st := control.Status{Processes: []control.ProcessStatus{
		{Job: "web", Process: "a", State: "running", Ready: true, Since: now,
			Usage: &control.Usage{CPUSeconds: 0.421, RSSBytes: 12_900_000, OpenFDs: 9, Processes: 1}},
		{Job: "web", Process: "b", State: "running", Ready: true, Since: now,
			Usage:  &control.Usage{CPUSeconds: 3725, RSSBytes: 3 << 30},
			Output: control.Output{DroppedStdout: 1536, DroppedStderr: 77}},
		{Job: "web", Process: "c", State: "stopped"},
	}}
	var b strings.Builder
	writeStatus(&b, st, false)
	lines := strings.Split(b.String(), "\n")
	for i, want := range [][]string{
		{"RESTARTS  MEM    CPU     LAST EXIT"},
		{" 12.3M  0.42s "},
		{" 3.0G   1h2m5s "},
		{"0         -      -       -"},
		{"warning: web/b: output lost, the log could not take it: 1.5K of stdout, 77B of stderr"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	if strings.Contains(b.String(), "web/a: output") {
		t.Errorf("a dropped-output line for a process that dropped nothing:\n%s", b.String())
	}
}

// TestStatusColumnsAlignWithColour: with colour on, every column starts
// where it does without colour, once the escape codes are taken out.
func TestStatusColumnsAlignWithColour(t *testing.T) {
	now := time.Now()
	st := control.Status{Processes: []control.ProcessStatus{
		{Job: "web", Process: "a", State: "running", Ready: true, Since: now, PID: 41},
		{Job: "web", Process: "server", State: "backoff", Restarts: 3},
		{Job: "db", Process: "postgres", State: "stopping", PID: 7,
			Stop: &control.StopProgress{Step: control.StepQuit, Signal: "SIGQUIT", Began: now, StepAt: now}},
		{Job: "db", Process: "x", State: "weird"},
	}}
	var plain, colored strings.Builder
	writeStatus(&plain, st, false)
	writeStatus(&colored, st, true)
	if !strings.Contains(colored.String(), "\x1b[32mrunning\x1b[0m") {
		t.Fatalf("no colour:\n%s", colored.String())
	}
	stripped := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(colored.String(), "")
	if stripped != plain.String() {
		t.Fatalf("with colour:\n%s\nwithout:\n%s", stripped, plain.String())
	}
	lines := strings.Split(plain.String(), "\n")
	col := strings.Index(lines[0], "HEALTH")
	for _, l := range lines[1:5] {
		if l[col-2:col] != "  " || l[col] == ' ' {
			t.Errorf("HEALTH column not at %d in %q", col, l)
		}
	}
	if !strings.Contains(lines[3], "stopping (SIGQUIT ") {
		t.Errorf("the ladder's step is not in the state: %q", lines[3])
	}
}

// TestStatusWarningsOnce: a warning that several processes share is said
// once, naming them, or "all N processes" when every one shown has it.
func TestStatusWarningsOnce(t *testing.T) {
	off := "isolation is switched off"
	for _, tc := range []struct {
		procs []control.ProcessStatus
		want  []string
	}{
		{[]control.ProcessStatus{
			{Job: "web", Process: "a", Warnings: []string{off}},
			{Job: "web", Process: "b", Warnings: []string{off, "no cgroup"}},
			{Job: "db", Process: "c"},
		}, []string{"warning: web/a, web/b: " + off, "warning: web/b: no cgroup"}},
		{[]control.ProcessStatus{
			{Job: "web", Process: "a", Warnings: []string{off}},
			{Job: "web", Process: "b", Warnings: []string{off}},
		}, []string{"warning: all 2 processes: " + off}},
		{[]control.ProcessStatus{{Job: "web", Process: "a", Warnings: []string{off}}}, []string{"warning: web/a: " + off}},
	} {
		var b strings.Builder
		writeWarnings(&b, tc.procs)
		if got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
