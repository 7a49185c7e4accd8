package jsonwire

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vigil-bosh/vigil/internal/jsonwire/jsonwiretest"
)

// sample is what the tests decode: a string, integers, a boolean, string
// and integer arrays, a nested object, and (left out when zero, as Object
// has no writer for them) a float, a time, a pointer to one and a list of
// objects.
type sample struct {
	S    string     `json:"s"`
	I    int64      `json:"i"`
	U    uint64     `json:"u"`
	B    bool       `json:"b"`
	SS   []string   `json:"ss"`
	IS   []int      `json:"is"`
	Sub  *sample    `json:"sub"`
	F    float64    `json:"f,omitempty"`
	T    time.Time  `json:"t,omitzero"`
	PT   *time.Time `json:"pt,omitempty"`
	Subs []*sample  `json:"subs,omitempty"`
}

func readSample(r *Reader) *sample {
	if r.Null() {
		return nil
	}
	s := &sample{}
	r.Object(func(key string) {
		switch key {
		case "s":
			s.S = r.String()
		case "i":
			s.I = r.Int()
		case "u":
			s.U = r.Uint()
		case "b":
			s.B = r.Bool()
		case "ss":
			s.SS = r.Strings()
		case "is":
			s.IS = r.Ints()
		case "sub":
			s.Sub = readSample(r)
		case "f":
			s.F = r.Float()
		case "t":
			s.T = r.Time()
		case "pt":
			s.PT = Pointer(r, (*Reader).Time)
		case "subs":
			s.Subs = List(r, readSample)
		default:
			r.Skip()
		}
	})
	return s
}

// decode reads doc with Reader and with encoding/json.
func decode(doc string) (ours, theirs *sample, errOurs, errTheirs error) {
	r := NewReader([]byte(doc))
	ours = readSample(r)
	errOurs = r.End()
	errTheirs = json.Unmarshal([]byte(doc), &theirs)
	return
}

// TestReadsWhatJSONReads: documents with every kind of value, escapes,
// white space, null members and unknown members (of every kind) decode as
// encoding/json decodes them.
func TestReadsWhatJSONReads(t *testing.T) {
	for _, doc := range []string{
		`{}`, `null`, ` { "s" : "x" , "i" : -12 , "u" : 18446744073709551615 , "b" : true } `,
		`{"s":"tab\t nl\n quote\" back\\ slash\/ \u00e9 \u65e5 \ud83d\ude00 \b\f\r"}`,
		`{"s":"lone \ud800 high, lone \udc00 low, \ud800\u0041 pair broken"}`,
		"{\"s\":\"raw \xff\xfe bytes, raw \xe6\x97\xa5 rune\"}",
		`{"ss":[],"is":[]}`, `{"ss":null,"is":null,"sub":null}`, `{"ss":["a","",null],"is":[1,-2,3]}`,
		`{"sub":{"s":"in","sub":{"i":1}}}`, `{"s":null,"i":null,"b":null}`,
		`{"x":{"y":[1,2.5e-3,{"z":null}],"w":"q"},"v":false,"s":"after unknown"}`,
		`{"i":-0,"s":"a"}`, `{"x":-1.5E+10,"y":0.0,"z":true}`,
		`{"f":1.5,"t":"2024-02-03T04:05:06.123456789+02:00","subs":[{"f":-1e-7},null,{"subs":[]}]}`,
		`{"f":-0,"t":null,"subs":null,"pt":null}`, `{"pt":"2024-02-03T04:05:06Z","subs":[{"pt":null}]}`, `{"f":1E+300}`, `{"f":123456789012345678901234567890}`,
		`{"f":4.9e-324}`, `{"f":1e-400}`, `{"f":0.1000000000000000055511151231257827}`, `{"f":null}`,
		`{"t":"0001-01-01T00:00:00Z"}`, `{"t":"9999-12-31T23:59:59.999999999-23:59"}`, `{"t":"2024-02-03T04:05:06,5Z"}`,
	} {
		ours, theirs, eo, et := decode(doc)
		if eo != nil || et != nil || !reflect.DeepEqual(ours, theirs) {
			t.Errorf("%s\n ours   %+v (%v)\n theirs %+v (%v)", doc, ours, eo, theirs, et)
		}
	}
}

// TestRefusesWhatJSONRefuses: malformed documents, and values of the
// wrong kind, are errors for both.
func TestRefusesWhatJSONRefuses(t *testing.T) {
	for _, doc := range []string{
		``, ` `, `{`, `{"s"}`, `{"s":}`, `{"s":"x",}`, `{"s":"x" "i":1}`, `{s:"x"}`, `{null:1}`,
		`{"s":"x"} x`, `{"s":"x"}{}`, `{"s":"unterminated}`, "{\"s\":\"ctl \x01\"}", `{"s":"\x"}`,
		`{"s":"\u12"}`, `{"s":"\u12g4"}`, `{"i":01}`, `{"i":1.5}`, `{"i":1e3}`, `{"i":+1}`, `{"i":9223372036854775808}`,
		`{"u":-1}`, `{"b":"true"}`, `{"s":1}`, `{"ss":"a"}`, `{"ss":[1]}`, `{"is":["1"]}`, `{"x":nul}`,
		`{"x":[1,]}`, `{"x":-}`, `{"x":1.}`, `{"x":.5}`, `{"x":1e}`, `{"sub":[]}`, `[]`, `"s"`, `{"x":tru}`,
		`{"f":1e400}`, `{"f":-1e309}`, `{"f":"1"}`, `{"f":true}`, `{"f":[]}`, `{"f":NaN}`, `{"f":0x10}`, `{"f":+1}`,
		`{"t":1}`, `{"t":{}}`, `{"t":"2024"}`, `{"t":"2024-02-03T04:05:06\u005a"}`, `{"t":"2024-02-30T00:00:00Z"}`,
		`{"t":"2024-02-03 04:05:06Z"}`, `{"subs":{}}`, `{"subs":[1]}`, `{"pt":1}`, `{"pt":"x"}`, `{"subs":[{"f":"x"}]}`,
		strings.Repeat(`{"sub":`, 10001) + `null` + strings.Repeat(`}`, 10001),
		`{"x":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`,
	} {
		ours, theirs, eo, et := decode(doc)
		if eo == nil || et == nil {
			t.Errorf("%q: ours %+v (%v), theirs %+v (%v)", doc, ours, eo, theirs, et)
		}
	}
}

// TestRefusesWhatTheDaemonNeverWrites: a key twice in one object, which
// encoding/json takes (keeping the last value, or merging two objects), is
// an error; nesting as deep as encoding/json allows is not.
func TestRefusesWhatTheDaemonNeverWrites(t *testing.T) {
	for _, doc := range []string{`{"s":"a","s":"b"}`, `{"sub":{"i":1},"sub":{"s":"x"}}`, `{"x":1,"sub":{"x":{},"x":2}}`,
		`{"s":"a","\u0073":"b"}`, `{"subs":[{"i":1,"s":"x","i":2}]}`} {
		if _, _, eo, et := decode(doc); eo == nil || et != nil {
			t.Errorf("%s: ours %v, theirs %v", doc, eo, et)
		}
	}
	deep := strings.Repeat(`{"sub":`, 9999) + `{"s":"deep"}` + strings.Repeat(`}`, 9999)
	if ours, theirs, eo, et := decode(deep); eo != nil || et != nil || !reflect.DeepEqual(ours, theirs) {
		t.Errorf("10000 deep: ours %v, theirs %v", eo, et)
	}
}

// TestWritesWhatJSONWrites: Object's members are byte for byte what
// encoding/json writes for the same struct.
func TestWritesWhatJSONWrites(t *testing.T) {
	for _, s := range []sample{
		{}, {S: "x", I: -1, U: 1 << 63, B: true, SS: []string{}, IS: []int{}},
		{S: "<&> \u2028 \xff \x00 \"\\\t", SS: []string{"a", ""}, IS: []int{-3, 0, 7}},
	} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		o := Begin([]byte("prefix "))
		o.String("s", s.S)
		o.Int("i", s.I)
		o.Uint("u", s.U)
		o.Bool("b", s.B)
		o.Strings("ss", s.SS)
		o.Ints("is", s.IS)
		o.Key("sub")
		o.B = append(o.B, "null"...)
		if got := string(o.End()); got != "prefix "+string(want) {
			t.Errorf("got  %s\nwant prefix %s", got, want)
		}
	}
}

// FuzzRoundTrip: whatever the values, Reader reads back what
// encoding/json writes for them, as encoding/json reads it.
func FuzzRoundTrip(f *testing.F) {
	f.Add("plain", "x", int64(1), uint64(2), true, 0.1)
	f.Add("\xff\u2028<\"\\", "\x00\ud7ff", int64(-1<<63), uint64(1<<64-1), false, -math.MaxFloat64)
	f.Fuzz(func(t *testing.T, s, e string, i int64, u uint64, b bool, fl float64) {
		if math.IsNaN(fl) || math.IsInf(fl, 0) {
			return // encoding/json writes no such float
		}
		at := time.Unix(0, i).In(time.FixedZone("", int(u%(24*60))*60))
		in := sample{S: s, I: i, U: u, B: b, SS: []string{e, s}, IS: []int{int(i), -int(i)}, Sub: &sample{S: e, SS: []string{}},
			F: fl, T: at, PT: &at, Subs: []*sample{{F: -fl, T: at.UTC()}, nil}}
		doc, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		ours, theirs, eo, et := decode(string(doc))
		if eo != nil || et != nil || !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("%s\n ours   %+v (%v)\n theirs %+v (%v)", doc, ours, eo, theirs, et)
		}
	})
}

// FuzzRead: on any input Reader ends (no panic, no loop), and it takes
// what encoding/json takes and reads it the same, unless the document is
// lenient (a key twice, which Reader refuses, or a key that differs from
// the fields' only by case, which Reader skips).
func FuzzRead(f *testing.F) {
	for _, seed := range []string{`{"B":"0"}`, `{"s":"x","sub":{"ss":["a"]}}`, `{"i":1,"x":[{"y":null}]}`, `{"s":"\ud83d\ude00"}`, `nul`,
		`{"f":-1.5e-7,"t":"2024-02-03T04:05:06.5+01:00","subs":[{"i":2},null]}`, `{"s":"a","s":"b"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		ours, theirs, eo, et := decode(doc)
		if jsonwiretest.Lenient([]byte(doc), &theirs) {
			return
		}
		if (eo == nil) != (et == nil) || eo == nil && !reflect.DeepEqual(ours, theirs) {
			t.Fatalf("%q\n ours   %+v (%v)\n theirs %+v (%v)", doc, ours, eo, theirs, et)
		}
	})
}

// TestCapture: Capture returns the bytes of the value read, as they are in
// the input, whitespace around it left out, and nil after an error.
func TestCapture(t *testing.T) {
	r := NewReader([]byte(`{"a": {"b" : [1, "x"]} , "c":2}`))
	var got []byte
	var b []int64
	r.Object(func(key string) {
		if key != "a" {
			r.Skip()
			return
		}
		got = r.Capture(func() {
			r.Object(func(string) { r.Array(func() { b = append(b, 0); r.Skip() }) })
		})
	})
	if err := r.End(); err != nil || string(got) != `{"b" : [1, "x"]}` || len(b) != 2 {
		t.Fatalf("captured %q (%d elements), %v", got, len(b), err)
	}
	bad := NewReader([]byte(`[1, }`))
	if got := bad.Capture(bad.Skip); got != nil || bad.Err() == nil {
		t.Fatalf("captured %q from a broken value, %v", got, bad.Err())
	}
}

// TestReadsInPlace: walking an array of objects allocates as much for 100
// as for one: keys (with ObjectBytes), numbers, times and skipped strings
// are read where they are in the input.
func TestReadsInPlace(t *testing.T) {
	allocs := func(n int) float64 {
		one := `{"key":"value","n":-12.5e3,"i":7,"t":"2024-02-03T04:05:06.5Z","o":{"x":[true,null,"y"]}}`
		doc := []byte("[" + strings.Repeat(one+",", n-1) + one + "]")
		return testing.AllocsPerRun(10, func() {
			r := NewReader(doc)
			r.Array(func() {
				r.ObjectBytes(func(key []byte) {
					switch string(key) {
					case "n":
						r.Float()
					case "i":
						r.Int()
					case "t":
						r.Time()
					default:
						r.Skip()
					}
				})
			})
			if err := r.End(); err != nil {
				t.Fatal(err)
			}
		})
	}
	if one, hundred := allocs(1), allocs(100); hundred != one {
		t.Errorf("%v allocations for one object, %v for 100", one, hundred)
	}
}
