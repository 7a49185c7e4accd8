package main

import (
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
