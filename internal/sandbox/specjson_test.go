package sandbox

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/vigil-bosh/vigil/internal/jsonwire/jsonwiretest"
)

// TestSpecJSON: AppendJSON writes byte for byte what encoding/json writes,
// and DecodeSpec reads back what encoding/json reads, for a spec with
// every field set (so that a field the code forgets fails), an empty one,
// and one with empty lists and mounts that leave their options out.
func TestSpecJSON(t *testing.T) {
	var full Spec
	jsonwiretest.Fill(&full)
	specs := []Spec{full, {}, {Mounts: []Mount{{Kind: KindProc, Dest: "/proc"}}, Masked: []string{}, Caps: []int{},
		Rlimits: []Rlimit{}, Args: []string{"a"}}}
	for _, s := range specs {
		checkSpec(t, s)
	}
	for _, bad := range []string{``, `null`, `[]`, `{"uid":"0"}`, `{"mounts":[{"ro":1}]}`, `{} {}`} {
		if _, err := DecodeSpec([]byte(bad)); err == nil {
			t.Errorf("DecodeSpec(%q) took it", bad)
		}
	}
}

// checkSpec fails t unless AppendJSON writes s as encoding/json does and
// DecodeSpec reads that as encoding/json does.
func checkSpec(t *testing.T, s Spec) {
	t.Helper()
	want, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.AppendJSON(nil); string(got) != string(want) {
		t.Fatalf("AppendJSON\n got %s\nwant %s", got, want)
	}
	var theirs Spec
	if err := json.Unmarshal(want, &theirs); err != nil {
		t.Fatal(err)
	}
	if ours, err := DecodeSpec(want); err != nil || !reflect.DeepEqual(ours, theirs) {
		t.Fatalf("DecodeSpec(%s)\n = %+v, %v\nwant %+v", want, ours, err, theirs)
	}
}

// FuzzSpecRandom: specs of random values (every field, any bytes in the
// strings, nil and empty lists) encode as encoding/json encodes them, and
// decode as encoding/json decodes them.
func FuzzSpecRandom(f *testing.F) {
	f.Add([]byte("\x04/tmp\x03\x04bind\x02/a\x01\x03\x02\xff\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Spec
		jsonwiretest.Random(&s, data)
		checkSpec(t, s)
	})
}

// FuzzDecodeSpecAny: on any input DecodeSpec ends with a spec or an
// error, never a panic; what it takes encoding/json takes and reads the
// same (unless a key may match a field only by case).
func FuzzDecodeSpecAny(f *testing.F) {
	for _, seed := range []string{`{"mounts":[{"kind":"bind","ro":true},null],"rlimits":[{"cur":1},null],"caps":[1,null]}`,
		`{"uid":-1,"x":{"y":[1.5e3]}}`, `{"root":"\ud800"}`, `{`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		ours, err := DecodeSpec(doc)
		if err != nil || jsonwiretest.MayFold(doc) {
			return
		}
		var theirs Spec
		if err := json.Unmarshal(doc, &theirs); err != nil || !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("DecodeSpec(%q)\n = %+v\nwant %+v, %v", doc, ours, theirs, err)
		}
	})
}
