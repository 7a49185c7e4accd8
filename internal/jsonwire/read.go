// Package jsonwire reads and writes JSON without reflection, for the
// messages between the daemon and a per-process init (the launch, the
// sandbox spec, the commands and reports; encoding/json's reflection
// caches for those types were the largest part of what an init allocates,
// about 85 KiB private memory per init) and for the status a command reads
// (encoding/json's decoding of it was 29% of `vigil status`'s CPU).
//
// Reader reads what encoding/json writes: object keys match exactly (not
// ignoring case, as encoding/json does), numbers are integers or float64s,
// times are time.Time's JSON, a key twice in one object is an error
// (encoding/json keeps the last, or merges), and values nest at most
// maxDepth deep (as in encoding/json). It reads in place: keys (through
// ObjectBytes), numbers, times and the strings it skips cost no
// allocation, so that what a document costs is the values kept. The Append
// functions write exactly what encoding/json writes for the same values.
package jsonwire

import (
	"bytes"
	"fmt"
)

// Reader reads one JSON document from a byte slice as its caller walks
// it: Object calls back for each member, whose value the callback reads
// with one of the value methods (or Skip). The first error stops the
// reading: every later call returns a zero value, and Err returns it.
type Reader struct {
	b     []byte
	i     int
	depth int      // objects and arrays open
	keys  [][]byte // the keys read so far in each object open, outermost first
	err   error
}

// maxDepth is how deep objects and arrays may nest: encoding/json's limit,
// which keeps the recursion of a hostile document off the stack's limit.
const maxDepth = 10000

// NewReader reads the document in b. Room for 32 keys is made at once:
// grown step by step, the list would take a page of a new size class at
// each step in a process that allocates little (an init: 10 KiB).
func NewReader(b []byte) *Reader { return &Reader{b: b, keys: make([][]byte, 0, 32)} }

// Err returns the first error.
func (r *Reader) Err() error { return r.err }

// End checks that nothing but white space follows the document and
// returns the first error.
func (r *Reader) End() error {
	if r.skipSpace(); r.err == nil && r.i < len(r.b) {
		r.fail("data after the document")
	}
	return r.err
}

func (r *Reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("jsonwire: offset %d: %s", r.i, fmt.Sprintf(format, args...))
	}
}

// skipSpace skips white space.
func (r *Reader) skipSpace() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// space skips white space and reports whether a byte follows (failing
// when none does: a value or a delimiter was due).
func (r *Reader) space() bool {
	if r.err != nil {
		return false
	}
	if r.skipSpace(); r.i == len(r.b) {
		r.fail("unexpected end")
		return false
	}
	return true
}

// Null reads null if it comes next, and reports whether it did.
func (r *Reader) Null() bool {
	if r.space() && r.literal("null") {
		return true
	}
	return false
}

// literal consumes word if the input continues with it.
func (r *Reader) literal(word string) bool {
	if len(r.b)-r.i >= len(word) && string(r.b[r.i:r.i+len(word)]) == word {
		r.i += len(word)
		return true
	}
	return false
}

// expect consumes the byte c after white space, or fails.
func (r *Reader) expect(c byte) bool {
	if !r.space() {
		return false
	}
	if r.b[r.i] != c {
		r.fail("expected %q, found %q", c, r.b[r.i])
		return false
	}
	r.i++
	return true
}

// enter opens an object or an array, unless that nests too deep; leave
// closes it.
func (r *Reader) enter() bool {
	if r.depth == maxDepth {
		r.fail("nested deeper than %d", maxDepth)
		return false
	}
	r.depth++
	return true
}

func (r *Reader) leave() { r.depth-- }

// seen tells whether key was read before in the object whose keys begin
// at r.keys[base].
func (r *Reader) seen(base int, key []byte) bool {
	for _, k := range r.keys[base:] {
		if bytes.Equal(k, key) {
			return true
		}
	}
	return false
}

// leaveObject closes the object whose keys begin at r.keys[base].
func (r *Reader) leaveObject(base int) {
	clear(r.keys[base:])
	r.keys = r.keys[:base]
	r.leave()
}

// Object reads an object, or null (no member), calling member with each
// key; member must read the value. A key twice is an error.
func (r *Reader) Object(member func(key string)) {
	r.ObjectBytes(func(key []byte) { member(string(key)) })
}

// ObjectBytes is Object with each key as bytes: a part of the input, or
// the key unescaped, without the copy a string takes. member must not
// change key, and must copy what it keeps of it; a switch on string(key)
// copies nothing.
func (r *Reader) ObjectBytes(member func(key []byte)) {
	if r.Null() || !r.expect('{') {
		return
	}
	if !r.enter() {
		return
	}
	base := len(r.keys) // this object's keys follow its outer objects'
	defer r.leaveObject(base)
	if r.space() && r.b[r.i] == '}' {
		r.i++
		return
	}
	for r.err == nil {
		key := r.quoted()
		if !r.expect(':') {
			return
		}
		if r.seen(base, key) {
			r.fail("key %q twice", key)
			return
		}
		r.keys = append(r.keys, key)
		member(key)
		if !r.space() {
			return
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail("expected ',' or '}', found %q", r.b[r.i])
		}
	}
}

// Array reads an array, calling elem for each element, which elem must
// read; it reports false for null (as for an error), true for an array.
func (r *Reader) Array(elem func()) bool {
	if r.Null() || !r.expect('[') || !r.enter() {
		return false
	}
	defer r.leave()
	if r.space() && r.b[r.i] == ']' {
		r.i++
		return true
	}
	for r.err == nil {
		elem()
		if !r.space() {
			return false
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			return true
		default:
			r.fail("expected ',' or ']', found %q", r.b[r.i])
		}
	}
	return false
}

// Strings reads an array of strings: nil for null, empty for [].
func (r *Reader) Strings() []string {
	var out []string
	if r.Array(func() { out = append(out, r.String()) }) && out == nil {
		out = []string{}
	}
	return out
}

// Ints reads an array of integers: nil for null, empty for [].
func (r *Reader) Ints() []int {
	var out []int
	if r.Array(func() { out = append(out, int(r.Int())) }) && out == nil {
		out = []int{}
	}
	return out
}

// Bool reads true or false ("false" for null).
func (r *Reader) Bool() bool {
	switch {
	case r.Null():
		return false
	case r.err != nil:
		return false
	case r.literal("true"):
		return true
	case r.literal("false"):
		return false
	}
	r.fail("expected a boolean")
	return false
}

// Capture runs read, which must read one value with r, and returns that
// value's bytes as they are in the input: a part of it, not a copy (nil
// after an error).
func (r *Reader) Capture(read func()) []byte {
	if !r.space() {
		return nil
	}
	start := r.i
	read()
	if r.err != nil {
		return nil
	}
	return r.b[start:r.i]
}

// Skip reads any value and drops it.
func (r *Reader) Skip() {
	if !r.space() {
		return
	}
	switch c := r.b[r.i]; {
	case c == '{':
		r.ObjectBytes(func([]byte) { r.Skip() })
	case c == '[':
		r.Array(r.Skip)
	case c == '"':
		r.quoted()
	case c == 't' || c == 'f':
		r.Bool()
	case c == 'n':
		if !r.Null() {
			r.fail("expected a value")
		}
	default:
		r.number()
	}
}

// List reads an array whose elements elem reads: nil for null, empty for
// [].
func List[T any](r *Reader, elem func(*Reader) T) []T {
	var out []T
	if r.Array(func() { out = append(out, elem(r)) }) && out == nil {
		out = []T{}
	}
	return out
}

// Pointer reads null as nil, and any other value into a new T with read.
func Pointer[T any](r *Reader, read func(*Reader) T) *T {
	if r.Null() {
		return nil
	}
	v := read(r)
	return &v
}
