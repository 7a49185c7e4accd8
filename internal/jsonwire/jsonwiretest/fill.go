// Package jsonwiretest fills messages for the tests of hand-written
// encoders and decoders (see package jsonwire).
package jsonwiretest

import (
	"encoding/binary"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Fill sets every field of the struct v points to that JSON carries (not
// tagged "-"), and every field of the structs it holds, to a value that
// is not its zero value, different for each field: a test of a
// hand-written encoder or decoder fills a message with it, so that a field
// added to the type and forgotten by the code fails the test. Strings get
// characters that need escaping, floats thirds (no short decimal), times
// nanoseconds and a zone offset.
func Fill(v any) {
	n := 0
	walk(reflect.ValueOf(v).Elem(), func(v reflect.Value) {
		n++
		switch v.Kind() {
		case reflect.String:
			v.SetString("v" + strconv.Itoa(n) + " \"<\\é\n")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int64, reflect.Int32:
			v.SetInt(int64(n) * -1000003)
		case reflect.Uint, reflect.Uint64, reflect.Uint32:
			v.SetUint(uint64(n)*1000003 + 1<<40)
		case reflect.Float64:
			v.SetFloat(float64(n) / -3)
		case reflect.Struct: // a time.Time
			zone := time.FixedZone("", (n%97-48)*15*60) // within 12 hours of UTC
			v.Set(reflect.ValueOf(time.Date(2000+n, 1, 2, 3, 4, 5, n*1000003, zone)))
		}
	}, func(reflect.Value) int { return 2 })
}

// Random sets the fields of the struct v points to (those JSON carries,
// as Fill does) from data, for a fuzz target: strings are taken from its
// bytes as they are (invalid UTF-8 included), numbers span their whole
// range (floats every finite value), times any nanosecond of years 1 to
// 9998 in any zone of whole minutes (what encoding/json can write),
// pointers may be nil and slices nil, empty or short. When data runs out,
// what is left gets zero values.
func Random(v any, data []byte) {
	s := source(data)
	walk(reflect.ValueOf(v).Elem(), func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(s.string())
		case reflect.Bool:
			v.SetBool(s.byte()&1 == 1)
		case reflect.Int, reflect.Int64, reflect.Int32:
			n := int64(s.uint64())
			if v.OverflowInt(n) {
				n = int64(int32(n))
			}
			v.SetInt(n)
		case reflect.Uint, reflect.Uint64, reflect.Uint32:
			n := s.uint64()
			if v.OverflowUint(n) {
				n = uint64(uint32(n))
			}
			v.SetUint(n)
		case reflect.Float64:
			v.SetFloat(s.float64())
		case reflect.Struct: // a time.Time
			v.Set(reflect.ValueOf(s.time()))
		}
	}, func(v reflect.Value) int {
		c := int(s.byte() % 5)
		if v.Kind() == reflect.Pointer {
			return c % 2 // nil or set
		}
		return c - 1 // nil, empty, or 1 to 3 elements
	})
}

// walk calls scalar for each string, bool, number and time.Time in v,
// descending into other structs (their fields JSON carries), pointers and
// slices; count says for a pointer whether to set it (0 leaves it nil) and
// for a slice its length (below 0 leaves it nil).
func walk(v reflect.Value, scalar func(reflect.Value), count func(reflect.Value) int) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			scalar(v)
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && tag != "-" {
				walk(v.Field(i), scalar, count)
			}
		}
	case reflect.Pointer:
		if count(v) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			walk(v.Elem(), scalar, count)
		}
	case reflect.Slice:
		n := count(v)
		if n < 0 {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			walk(v.Index(i), scalar, count)
		}
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Int32,
		reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Float64:
		scalar(v)
	default:
		panic("jsonwiretest: no value for " + v.Type().String())
	}
}

// source hands out the bytes of a fuzz input.
type source []byte

func (s *source) byte() byte {
	if len(*s) == 0 {
		return 0
	}
	c := (*s)[0]
	*s = (*s)[1:]
	return c
}

func (s *source) uint64() uint64 {
	var b [8]byte
	*s = (*s)[copy(b[:], *s):]
	return binary.LittleEndian.Uint64(b[:])
}

// float64 is any finite float64 (an infinity or NaN's bits as an
// integer).
func (s *source) float64() float64 {
	u := s.uint64()
	if f := math.Float64frombits(u); !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f
	}
	return float64(int64(u))
}

// time is a time of years 1 to 9998 (so that its zone takes it to no year
// encoding/json cannot write) to the nanosecond, in a zone of whole
// minutes within a day of UTC.
func (s *source) time() time.Time {
	first := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	span := uint64(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - first)
	sec := first + int64(s.uint64()%span)
	nsec := int64(s.uint64() % uint64(time.Second))
	zone := time.FixedZone("", int(int64(s.uint64())%(24*60))*60)
	return time.Unix(sec, nsec).In(zone)
}

// string takes up to 15 bytes, as many as its first says.
func (s *source) string() string {
	n := min(int(s.byte()%16), len(*s))
	str := string((*s)[:n])
	*s = (*s)[n:]
	return str
}

// MayFold tells whether doc may hold a key that encoding/json matches to
// a field and jsonwire does not (jsonwire matches keys exactly,
// encoding/json ignoring case), for fields whose JSON names are lower case
// ASCII: it says yes for any upper case letter, any \u escape, and the two
// non-ASCII letters that fold to ASCII ones (ſ and the Kelvin sign).
func MayFold(doc []byte) bool {
	return strings.ContainsAny(string(doc), "ABCDEFGHIJKLMNOPQRSTUVWXYZ\u017f\u212a") || strings.Contains(string(doc), `\u`)
}
