package monit

import (
	"context"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
	"github.com/vigil-bosh/vigil/internal/monit/monitrc"
	"github.com/vigil-bosh/vigil/internal/supervise"
)

func TestBPMShim(t *testing.T) {
	l, _ := boshpath.New("/tmp/root")
	tests := []struct {
		argv []string
		want supervise.ID
		ok   bool
	}{
		{[]string{"/var/vcap/jobs/bpm/bin/bpm", "start", "web"}, supervise.ID{Job: "web", Process: "web"}, true},
		{[]string{"/tmp/root/jobs/bpm/bin/bpm", "start", "web", "-p", "worker"}, supervise.ID{Job: "web", Process: "worker"}, true},
		{[]string{"/var/vcap/jobs/bpm/bin/bpm", "start", "web", "--process=worker"}, supervise.ID{Job: "web", Process: "worker"}, true},
		{[]string{"/var/vcap/jobs/bpm/bin/bpm", "stop", "web"}, supervise.ID{}, false},
		{[]string{"/usr/bin/bpm", "start", "web"}, supervise.ID{}, false},
		{[]string{"/var/vcap/jobs/bpm/bin/bpm", "start", "web", "-p"}, supervise.ID{}, false},
		{[]string{"/var/vcap/jobs/bpm/bin/bpm", "start", "../etc"}, supervise.ID{}, false},
	}
	for _, tt := range tests {
		got, ok := BPMShim(l, &monitrc.Program{Argv: tt.argv})
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q: got %v %v, want %v %v", tt.argv, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := BPMShim(l, nil); ok {
		t.Error("no start program is not the shim")
	}
}

func TestFlagUnitKeepsTheFlag(t *testing.T) {
	u := NewFlagUnit()
	ctx := context.Background()
	steps := []struct {
		act  func(context.Context) error
		want int
	}{{nil, Monitored}, {u.Unmonitor, NotMonitored}, {u.Start, Monitored}, {u.Stop, NotMonitored}, {u.Monitor, Monitored}}
	for i, s := range steps {
		if s.act != nil {
			if err := s.act(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if st := u.Status(); !st.Running || st.Monitor != s.want {
			t.Fatalf("step %d: %+v, want monitor %d", i, st, s.want)
		}
	}
}
