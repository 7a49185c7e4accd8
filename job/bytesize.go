package job

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
)

// errByteQuantity is bytefmt's text for a bad limits.memory value.
var errByteQuantity = errors.New("byte quantity must be a positive integer with a unit of measurement like M, MB, MiB, G, GiB, or GB")

// byteUnits are bytefmt's units, upper-cased; all are powers of 1024.
var byteUnits = map[string]uint64{
	"B": 1,
	"K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
	"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
	"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
	"T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40,
	"P": 1 << 50, "PB": 1 << 50, "PIB": 1 << 50,
	"E": 1 << 60, "EB": 1 << 60, "EIB": 1 << 60,
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
	unit, ok := byteUnits[s[i:]]
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
