package jsonwire

import "strconv"

// Int reads an integer that fits in an int64 (0 for null).
func (r *Reader) Int() int64 {
	n, ok := r.number()
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		r.fail("%q is no int64", n)
	}
	return v
}

// Uint reads an integer that fits in a uint64 (0 for null).
func (r *Reader) Uint() uint64 {
	n, ok := r.number()
	if !ok {
		return 0
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		r.fail("%q is no uint64", n)
	}
	return v
}

// number returns the text of the number that comes next (a part of the
// input, not a copy); false for null or an error.
func (r *Reader) number() ([]byte, bool) {
	if r.Null() || r.err != nil {
		return nil, false
	}
	start := r.i
	for r.i < len(r.b) && isNumberByte(r.b[r.i]) {
		r.i++
	}
	n := r.b[start:r.i]
	if !validNumber(n) {
		r.i = start
		r.fail("expected a number")
		return nil, false
	}
	return n, true
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// validNumber tells whether n is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(n []byte) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(n) && '0' <= n[i] && n[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(n) && n[i] == '-' {
		i++
	}
	switch {
	case i < len(n) && n[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(n) && n[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(n) && (n[i] == 'e' || n[i] == 'E') {
		i++
		if i < len(n) && (n[i] == '+' || n[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(n)
}

// Float reads a number as encoding/json reads it into a float64 (0 for
// null): any JSON number, rounded to the nearest float64; one beyond
// float64's range is an error, as it is for encoding/json.
func (r *Reader) Float() float64 {
	n, ok := r.number()
	if !ok {
		return 0
	}
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		r.fail("%q is no float64", n)
		return 0
	}
	return v
}
