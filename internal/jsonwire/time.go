package jsonwire

import "time"

// Time reads a time as encoding/json reads it into a time.Time, through
// the time's own UnmarshalJSON: a string in RFC 3339 (its escapes not
// undone), the zero time for null; any other value is an error.
func (r *Reader) Time() time.Time {
	var t time.Time
	raw := r.Capture(r.Skip)
	if raw == nil {
		return t
	}
	if err := t.UnmarshalJSON(raw); err != nil {
		r.fail("%v", err)
		return time.Time{}
	}
	return t
}
