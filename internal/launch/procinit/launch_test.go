package procinit

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vigil-bosh/vigil/internal/jsonwire/jsonwiretest"
	"github.com/vigil-bosh/vigil/internal/sandbox"
)

// TestDecodeLaunch: the init's hand-made decoding of a launch reads back
// what encoding/json reads, for a launch with every field set (its spec's
// too, so that a field the code forgets fails), an empty one, and one
// whose lists are empty; unknown keys are skipped; a malformed launch is
// an error.
func TestDecodeLaunch(t *testing.T) {
	var full Launch
	jsonwiretest.Fill(&full)
	launches := []Launch{full, {}, {Args: []string{}, Env: []string{}, Warnings: []string{}, Logs: &LogRotation{}}}
	for _, l := range launches {
		checkLaunch(t, l)
	}
	if l, _, err := decodeLaunch([]byte(`{"future":{"x":[1,"a",null]},"label":"a/b"}`)); err != nil || l.Label != "a/b" {
		t.Errorf("unknown keys: %+v, %v", l, err)
	}
	for _, bad := range []string{``, `null`, `{"label":`, `{"args":"x"}`, `{"hook_timeout":1.5}`, `{"sandbox":[]}`, `{"logs":{"keep":"1"}}`} {
		if _, _, err := decodeLaunch([]byte(bad)); err == nil {
			t.Errorf("decodeLaunch(%q) took it", bad)
		}
	}
}

// checkLaunch fails t unless decodeLaunch reads l, as the daemon's
// encoding/json writes it (and its newline), as encoding/json reads it.
func checkLaunch(t *testing.T, l Launch) {
	t.Helper()
	raw, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var theirs Launch
	if err := json.Unmarshal(raw, &theirs); err != nil {
		t.Fatal(err)
	}
	ours, spec, err := decodeLaunch(append(raw, '\n'))
	if err != nil || !reflect.DeepEqual(ours, initsPart(theirs)) {
		t.Fatalf("decodeLaunch(%s)\n = %+v, %v\nwant %+v", raw, ours, err, initsPart(theirs))
	}
	// The sandbox's JSON, passed on to the helper as it is, decodes there
	// to the spec the launch holds.
	if theirs.Sandbox == nil {
		if spec != nil {
			t.Fatalf("no sandbox, but its JSON %s", spec)
		}
		return
	}
	if got, err := sandbox.DecodeSpec(spec); err != nil || !reflect.DeepEqual(&got, theirs.Sandbox) {
		t.Fatalf("the helper decodes %+v, %v; want %+v", got, err, theirs.Sandbox)
	}
}

// initsPart is l as the init reads it: of the sandbox's spec only what it
// uses itself (the helper reads the rest).
func initsPart(l Launch) Launch {
	if l.Sandbox != nil {
		l.Sandbox = &sandbox.Spec{Cgroups: l.Sandbox.Cgroups, Host: l.Sandbox.Host}
	}
	return l
}

// TestDecodeCommand: both commands as the daemon writes them, and the
// malformed.
func TestDecodeCommand(t *testing.T) {
	for _, cmd := range []string{CmdKill, CmdReopen} {
		raw, _ := json.Marshal(Command{Cmd: cmd})
		if c, err := decodeCommand(append(raw, '\n')); err != nil || c.Cmd != cmd {
			t.Errorf("decodeCommand(%s) = %+v, %v", raw, c, err)
		}
	}
	for _, bad := range []string{``, `null`, `{"cmd":1}`, `{"cmd":"kill"`} {
		if _, err := decodeCommand([]byte(bad)); err == nil {
			t.Errorf("decodeCommand(%q) took it", bad)
		}
	}
}

// FuzzLaunchRandom: launches of random values (every field, its spec's
// too, any bytes in the strings, nil and empty lists, nil pointers), as
// the daemon's encoding/json writes them, decode as encoding/json decodes
// them.
func FuzzLaunchRandom(f *testing.F) {
	f.Add([]byte("\x03a/b\x02/x\x03\x01\x00\x02\xff\xfe"))
	f.Add([]byte("\x0f<>&\u2028\\\"\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var l Launch
		jsonwiretest.Random(&l, data)
		checkLaunch(t, l)
		raw, _ := json.Marshal(Command{Cmd: l.Label})
		var want Command
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if got, err := decodeCommand(raw); err != nil || got != want {
			t.Fatalf("decodeCommand(%s) = %+v, %v, want %+v", raw, got, err, want)
		}
	})
}

// FuzzDecodeAny: on any input the init's decoders end with a value or an
// error, never a panic; what they take (with the sandbox helper's
// decoding of the spec the init passes on) encoding/json takes and reads
// the same (unless a key may match a field only by case, which
// encoding/json ignores and they do not).
func FuzzDecodeAny(f *testing.F) {
	for _, seed := range []string{`{"label":"a","sandbox":{"mounts":[{"kind":"bind","ro":true}],"rlimits":[{"cur":1}]}}`,
		`{"logs":{"keep":2},"args":["a",null],"hook_timeout":-5}`, `{"cmd":"kill"}`, `{"sandbox":null,"x":[{}]}`, `[`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		l, spec, errL := decodeLaunch(doc)
		var helpers sandbox.Spec
		if errL == nil && spec != nil {
			helpers, errL = sandbox.DecodeSpec(spec)
		}
		c, errC := decodeCommand(doc)
		if jsonwiretest.MayFold(doc) {
			return
		}
		if errL == nil {
			var theirs Launch
			if err := json.Unmarshal(doc, &theirs); err != nil || !reflect.DeepEqual(l, initsPart(theirs)) {
				t.Fatalf("decodeLaunch(%q)\n = %+v\nwant %+v, %v", doc, l, theirs, err)
			}
			if spec != nil && !reflect.DeepEqual(&helpers, theirs.Sandbox) {
				t.Fatalf("the helper decodes %+v from %q, want %+v", helpers, spec, theirs.Sandbox)
			}
		}
		if errC == nil {
			var theirs Command
			if err := json.Unmarshal(doc, &theirs); err != nil || c != theirs {
				t.Fatalf("decodeCommand(%q) = %+v, want %+v, %v", doc, c, theirs, err)
			}
		}
	})
}
