package faults

import (
	"encoding/json"
	"errors"
	"os"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/vigil-bosh/vigil/control"
)

// TestConfigRewrittenDuringReload: bpm.yml is rewritten in place
// (truncated, then written in two parts) over and over while reloads read
// it. A reload may see an empty file or a part of one; neither takes a
// running process down: the job keeps its last good configuration and the
// problem is reported. Once the writes end, a reload finds the file whole
// and has nothing to do. The file is bpm.yml in YAML's flow (JSON) style,
// so every part of it short of the whole is invalid or empty.
func TestConfigRewrittenDuringReload(t *testing.T) {
	r := newRig(t)
	r.job("web", tp{name: "a", behaviour: "serve"}, tp{name: "b", behaviour: "serve"})
	r.up(0)
	a, b := r.once("web", "a"), r.once("web", "b")
	whole := flowStyle(t, r.layout.BPMConfig("web"))
	r.write(r.layout.BPMConfig("web"), string(whole), 0o644)
	if res, err := r.client().Reload(t.Context()); err != nil || len(res.Unchanged) != 2 {
		t.Fatalf("the flow-style file is not the same configuration: %v %+v", err, res)
	}

	// First without a race, so the test cannot pass on reloads that never
	// met a broken file: the file truncated, then holding a part only.
	for _, part := range [][]byte{nil, whole[:len(whole)/2]} {
		r.write(r.layout.BPMConfig("web"), string(part), 0o644)
		res, err := r.client().Reload(t.Context())
		if err != nil || len(res.Stopped)+len(res.Restarted) != 0 || !hasError(res.Problems, "web") {
			t.Fatalf("a reload of %d bytes of bpm.yml: %v %+v", len(part), err, res)
		}
	}
	r.write(r.layout.BPMConfig("web"), string(whole), 0o644)

	const writes = 400
	written, stop := make(chan error, 1), make(chan struct{})
	var writer sync.WaitGroup
	defer writer.Wait() // on every way out, after stop is closed
	defer close(stop)
	writer.Go(func() {
		for i := range writes {
			select {
			case <-stop:
				return
			default:
			}
			f, err := os.OpenFile(r.layout.BPMConfig("web"), os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				written <- err
				return
			}
			cut := 1 + i*7%(len(whole)-1)
			_, err1 := f.Write(whole[:cut])
			_, err2 := f.Write(whole[cut:])
			if err := errors.Join(err1, err2, f.Close()); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	})
	reloads, problems := 0, 0
	for done := false; !done; reloads++ {
		select {
		case err := <-written:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
		}
		res, err := r.client().Reload(t.Context())
		if err != nil || len(res.Stopped)+len(res.Restarted) != 0 {
			t.Fatalf("reload %d took processes down: %v %+v", reloads, err, res)
		}
		if hasError(res.Problems, "web") {
			problems++
		}
	}
	t.Logf("%d reloads during %d writes; %d saw a broken file", reloads, writes, problems)
	res, err := r.client().Reload(t.Context())
	if err != nil || len(res.Unchanged) != 2 || hasError(res.Problems, "web") {
		t.Fatalf("the final reload: %v %+v", err, res)
	}
	for _, before := range []control.ProcessStatus{a, b} {
		r.same(before)
	}
}

// flowStyle rewrites the YAML bpm.yml at path as one line of JSON.
func flowStyle(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

func hasError(ps []control.Problem, job string) bool {
	for _, p := range ps {
		if p.Job == job && p.Severity == "error" {
			return true
		}
	}
	return false
}
