package jsonwire

import (
	"strconv"
	"unicode/utf8"
)

// Object appends the members of one JSON object, as encoding/json writes
// them: in the order given, each member's value encoded as encoding/json
// encodes its Go value. Start with Begin and finish with End.
type Object struct {
	B []byte // the encoding so far
	n int    // members written
}

// Begin starts an object at the end of b.
func Begin(b []byte) Object { return Object{B: append(b, '{')} }

// End closes the object and returns the encoding.
func (o *Object) End() []byte { return append(o.B, '}') }

// Key writes the key of the next member; its value must follow (with an
// Append function, or a nested Begin and End on o.B).
func (o *Object) Key(k string) {
	if o.n > 0 {
		o.B = append(o.B, ',')
	}
	o.n++
	o.B = append(AppendString(o.B, k), ':')
}

// String writes a string member.
func (o *Object) String(k, v string) { o.Key(k); o.B = AppendString(o.B, v) }

// Int writes an integer member.
func (o *Object) Int(k string, v int64) { o.Key(k); o.B = strconv.AppendInt(o.B, v, 10) }

// Uint writes an unsigned integer member.
func (o *Object) Uint(k string, v uint64) { o.Key(k); o.B = strconv.AppendUint(o.B, v, 10) }

// Bool writes a boolean member.
func (o *Object) Bool(k string, v bool) { o.Key(k); o.B = strconv.AppendBool(o.B, v) }

// Strings writes an array of strings member (null for nil).
func (o *Object) Strings(k string, v []string) { o.Key(k); o.B = AppendStrings(o.B, v) }

// Ints writes an array of integers member (null for nil).
func (o *Object) Ints(k string, v []int) {
	o.Key(k)
	if v == nil {
		o.B = append(o.B, "null"...)
		return
	}
	o.B = append(o.B, '[')
	for i, n := range v {
		if i > 0 {
			o.B = append(o.B, ',')
		}
		o.B = strconv.AppendInt(o.B, int64(n), 10)
	}
	o.B = append(o.B, ']')
}

// AppendStrings appends v as a JSON array of strings (null for nil).
func AppendStrings(b []byte, v []string) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// AppendString appends s as a JSON string the way encoding/json does:
// HTML-sensitive characters and U+2028/U+2029 escaped, invalid UTF-8
// replaced by U+FFFD.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
