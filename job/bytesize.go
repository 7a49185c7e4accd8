package job

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
)

// errByteQuantity is bytefmt's text for a bad limits.memory value.
var errByteQuantity = errors.New("byte quantity must be a positive integer with a unit of measurement like M, MB, MiB, G, GiB, or GB")

// byteUnit is the size of bytefmt's unit u (upper-cased, not empty): B,
// or K, M, G, T, P, E alone or followed by B or IB, all powers of 1024.
func byteUnit(u string) (uint64, bool) {
	if u == "B" {
		return 1, true
	}
	i := strings.IndexByte("KMGTPE", u[0])
	if i < 0 {
		return 0, false
	}
	switch u[1:] {
	case "", "B", "IB":
		return 1 << (10 * (i + 1)), true
	}
	return 0, false
}

// parseByteSize reads a quantity the way code.cloudfoundry.org/bytefmt's
// ToBytes does: a number (decimals allowed) followed by a required unit,
// case-insensitive, surrounding spaces ignored. Unlike bytefmt it also
// rejects zero and values that do not fit in a uint64, which bytefmt lets
// through as a meaningless limit.
func parseByteSize(s string) (uint64, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	i := strings.IndexFunc(s, unicode.IsLetter)
	if i < 0 {
		return 0, errByteQuantity
	}
	unit, ok := byteUnit(s[i:])
	n, err := strconv.ParseFloat(s[:i], 64)
	if !ok || err != nil || !(n > 0) {
		return 0, errByteQuantity
	}
	b := n * float64(unit)
	if b < 1 || b >= 1<<64 {
		return 0, errByteQuantity
	}
	return uint64(b), nil
}
