package jsonwiretest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// message has a field of each kind Fill and Random set.
type message struct {
	S      string     `json:"s"`
	I      int        `json:"i"`
	U      uint32     `json:"u"`
	B      bool       `json:"b,omitempty"`
	F      float64    `json:"f"`
	T      time.Time  `json:"t"`
	PT     *time.Time `json:"pt"`
	List   []string   `json:"list"`
	Nested []inner    `json:"nested"`
	Ptr    *inner     `json:"ptr"`
	Skip   int        `json:"-"`
}

type inner struct {
	At    time.Time `json:"at"`
	Ratio float64   `json:"ratio"`
	Name  string    `json:"Name"`
}

// TestFillSetsEveryField: no field JSON carries, at any depth, is left
// zero, and each differs from the others.
func TestFillSetsEveryField(t *testing.T) {
	var m message
	Fill(&m)
	seen := map[any]string{}
	var check func(v reflect.Value, path string)
	check = func(v reflect.Value, path string) {
		switch {
		case v.IsZero():
			t.Errorf("%s is zero", path)
		case v.Kind() == reflect.Pointer:
			check(v.Elem(), path)
		case v.Kind() == reflect.Slice:
			for i := range v.Len() {
				check(v.Index(i), path+"["+string(rune('0'+i))+"]")
			}
		case v.Kind() == reflect.Struct && v.Type() != reflect.TypeFor[time.Time]():
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.Tag.Get("json") != "-" {
					check(v.Field(i), path+"."+f.Name)
				}
			}
		default:
			if other, ok := seen[v.Interface()]; ok && v.Kind() != reflect.Bool {
				t.Errorf("%s and %s are both %v", other, path, v)
			}
			seen[v.Interface()] = path
		}
	}
	check(reflect.ValueOf(m), "m")
	if m.Skip != 0 {
		t.Errorf("the field tagged - is %d", m.Skip)
	}
	if _, err := json.Marshal(m); err != nil {
		t.Fatal(err)
	}
}

// FuzzRandom: whatever the input, Random's values are ones encoding/json
// writes.
func FuzzRandom(f *testing.F) {
	f.Add([]byte("\x01x\xff\xff\xff\xff\xff\xff\xff\xff\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m message
		Random(&m, data)
		if _, err := json.Marshal(m); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
	})
}

// TestLenient: a key twice in one object, at any depth, and a key that
// matches a field of any depth only ignoring case, are lenient; exact
// keys, unknown keys, the same key in two objects and broken documents
// are not.
func TestLenient(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"s":"a","s":"b"}`: true,
		`{"nested":[{"at":null},{"ratio":1,"ratio":2}]}`: true,
		`{"x":{"y":1,"y":2}}`:                            true,
		`{"S":"a"}`:                                      true,
		`{"ptr":{"RATIO":1}}`:                            true,
		`{"ptr":{"name":"x"}}`:                           true, // the field's name is "Name"
		`{"\u0053":"a"}`:                                 true,
		"{\"\u017f\":\"a\"}":                             true, // ſ folds to s
		`{"s":"S","list":["S","s"],"x":{"s":1}}`:         false,
		`{"nested":[{"at":null},{"at":null}]}`:           false,
		`{"ptr":{"Name":"x"},"x":[{"y":{}}]}`:            false,
		`{"s":"a","s":`:                                  false,
		`{"s":"a","s":"b"} {}`:                           false,
		`{"s":"a","s":"b"}x`:                             false,
		`[1,{"s":1},{"s":2}]`:                            false,
	} {
		if got := Lenient([]byte(doc), &message{}); got != want {
			t.Errorf("Lenient(%s) = %v", doc, got)
		}
	}
}
