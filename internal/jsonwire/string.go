package jsonwire

import (
	"unicode/utf16"
	"unicode/utf8"
)

// String reads a string ("" for null). Invalid UTF-8 and lone surrogates
// become U+FFFD, as encoding/json reads them.
func (r *Reader) String() string {
	if r.Null() {
		return ""
	}
	return string(r.quoted())
}

// quoted reads a string, which must come next, and returns its value: a
// part of the input when there is nothing to unescape (the common case),
// else a new slice.
func (r *Reader) quoted() []byte {
	if !r.expect('"') {
		return nil
	}
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			r.i++
			return r.b[start : r.i-1]
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		r.i++
	}
	r.i = start
	return r.unquote()
}

// unquote reads the rest of a string whose opening quote was read, and
// returns it unescaped.
func (r *Reader) unquote() []byte {
	var out []byte
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			return out
		case c < 0x20:
			r.fail("control character %q in a string", c)
			return nil
		case c == '\\':
			out = r.escape(out)
			if r.err != nil {
				return nil
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			r.i++
		default:
			ru, size := utf8.DecodeRune(r.b[r.i:])
			out = utf8.AppendRune(out, ru) // RuneError for invalid bytes
			r.i += size
		}
	}
	r.fail("unterminated string")
	return nil
}

// escape appends what the escape sequence at r.i stands for.
func (r *Reader) escape(out []byte) []byte {
	if r.i+1 >= len(r.b) {
		r.fail("unterminated string")
		return out
	}
	c := r.b[r.i+1]
	r.i += 2
	switch c {
	case '"', '\\', '/':
		return append(out, c)
	case 'b':
		return append(out, '\b')
	case 'f':
		return append(out, '\f')
	case 'n':
		return append(out, '\n')
	case 'r':
		return append(out, '\r')
	case 't':
		return append(out, '\t')
	case 'u':
		ru := r.hex4()
		if utf16.IsSurrogate(ru) {
			lo := rune(-1)
			if r.i+1 < len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
				save := r.i
				r.i += 2
				if lo = r.hex4(); utf16.DecodeRune(ru, lo) == utf8.RuneError {
					r.i, lo = save, -1 // not a pair: the next escape stands alone
				}
			}
			ru = utf16.DecodeRune(ru, lo) // U+FFFD for a lone surrogate
		}
		return utf8.AppendRune(out, ru)
	}
	r.fail("invalid escape \\%c", c)
	return out
}

// hex4 reads four hexadecimal digits.
func (r *Reader) hex4() rune {
	if len(r.b)-r.i < 4 {
		r.fail("short \\u escape")
		return 0
	}
	var v rune
	for _, c := range r.b[r.i : r.i+4] {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			v = v<<4 | rune(c-'A'+10)
		default:
			r.fail("invalid \\u escape")
			return 0
		}
	}
	r.i += 4
	return v
}
