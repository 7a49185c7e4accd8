package jsonwiretest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// Lenient tells whether encoding/json may read doc into the type v points
// to where jsonwire refuses doc or reads it otherwise: doc holds an object
// with a key twice (jsonwire refuses it; encoding/json keeps the last
// value, or merges), or a key that differs from a JSON field name of the
// type or of a type it holds and matches it when case is ignored (jsonwire
// skips it; encoding/json sets the field). Nothing the daemon writes is
// lenient: a fuzz target excuses a disagreement on such a document alone.
// A document encoding/json cannot read is not lenient.
func Lenient(doc []byte, v any) bool {
	names := fieldNames(reflect.TypeOf(v))
	type open struct {
		keys    map[string]bool // nil for an array
		wantKey bool
	}
	var stack []open
	lenient := false
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // a number out of float64's range is still a token (a skipped value may hold one)
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // a document encoding/json refuses
		}
		top := len(stack) - 1
		if k, ok := tok.(string); ok && top >= 0 && stack[top].wantKey {
			lenient = lenient || stack[top].keys[k] || folds(k, names)
			stack[top].keys[k], stack[top].wantKey = true, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, open{keys: map[string]bool{}, wantKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, open{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
		}
		if top = len(stack) - 1; top < 0 { // the document's value ended
			return lenient && len(bytes.Trim(doc[dec.InputOffset():], " \t\n\r")) == 0
		}
		if stack[top].keys != nil {
			stack[top].wantKey = true // a value ended: a key or the end follows
		}
	}
}

// folds tells whether key matches one of names only when case is ignored,
// as encoding/json matches a key to a field.
func folds(key string, names map[string]bool) bool {
	for name := range names {
		if key != name && strings.EqualFold(key, name) {
			return true
		}
	}
	return false
}

// fieldNames returns the JSON names of the fields of t (a struct, or a
// pointer or slice of one) and of the types they hold.
func fieldNames(t reflect.Type) map[string]bool {
	names, seen := map[string]bool{}, map[reflect.Type]bool{}
	var add func(reflect.Type)
	add = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			names[name] = true
			add(f.Type)
		}
	}
	add(t)
	return names
}
