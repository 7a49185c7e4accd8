package bpmcli

import (
	"fmt"
	"strconv"
	"strings"
)

// flagKind is the type of a flag's value.
type flagKind int

const (
	boolFlag   flagKind = iota
	stringFlag          // the last value wins
	intFlag             // the last value wins
	listFlag            // repeatable: every value is kept
)

// flagSpec describes one flag the way bpm (cobra with pflag) declares it.
type flagSpec struct {
	long  string
	short byte // 0 when the flag has no one-letter form
	kind  flagKind
	def   string
	help  string
}

// parsed is a command line after flag parsing: the positional arguments in
// order and the flags' values by long name.
type parsed struct {
	pos  []string
	vals map[string][]string
}

func (p parsed) str(name string) string {
	if v := p.vals[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func (p parsed) list(name string) []string { return p.vals[name] }

func (p parsed) bool(name string) bool { return p.str(name) == "true" }

func (p parsed) int(name string) int {
	n, _ := strconv.Atoi(p.str(name)) // checked while parsing
	return n
}

// parseFlags reads args as pflag does: flags may come before, between or
// after the positional arguments; "--" ends the flags; long flags take
// "--name value" or "--name=value"; short ones "-p value", "-pvalue" or
// "-p=value", and booleans may be grouped ("-af"). The errors carry
// pflag's texts.
func parseFlags(specs []flagSpec, args []string) (parsed, error) {
	p := parsed{vals: map[string][]string{}}
	for _, s := range specs {
		if s.def != "" {
			p.vals[s.long] = []string{s.def}
		}
	}
	set := func(s flagSpec, v string) error {
		switch s.kind {
		case intFlag:
			if _, err := strconv.ParseInt(v, 0, 0); err != nil {
				return fmt.Errorf("invalid argument %q for \"%s\" flag: %w", v, flagNames(s), err)
			}
		case boolFlag:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("invalid argument %q for \"%s\" flag: %w", v, flagNames(s), err)
			}
			v = strconv.FormatBool(b)
		}
		if s.kind == listFlag {
			p.vals[s.long] = append(p.vals[s.long], v)
		} else {
			p.vals[s.long] = []string{v}
		}
		return nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.pos = append(p.pos, args[i+1:]...)
			return p, nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			s, ok := findLong(specs, name)
			if !ok {
				return p, fmt.Errorf("unknown flag: --%s", name)
			}
			switch {
			case hasVal:
			case s.kind == boolFlag:
				val = "true"
			case i+1 < len(args):
				i++
				val = args[i]
			default:
				return p, fmt.Errorf("flag needs an argument: --%s", name)
			}
			if err := set(s, val); err != nil {
				return p, err
			}
		case len(a) > 1 && a[0] == '-':
			consumed, err := parseShorts(specs, args, i, set)
			if err != nil {
				return p, err
			}
			i += consumed
		default:
			p.pos = append(p.pos, a)
		}
	}
	return p, nil
}

// parseShorts reads a group of one-letter flags at args[i] and returns how
// many of the following arguments it used as a value.
func parseShorts(specs []flagSpec, args []string, i int, set func(flagSpec, string) error) (int, error) {
	group := args[i][1:]
	for j := 0; j < len(group); j++ {
		s, ok := findShort(specs, group[j])
		if !ok {
			return 0, fmt.Errorf("unknown shorthand flag: %q in -%s", group[j], group)
		}
		rest := group[j+1:]
		switch {
		case s.kind == boolFlag && strings.HasPrefix(rest, "="):
			return 0, set(s, rest[1:])
		case s.kind == boolFlag:
			if err := set(s, "true"); err != nil {
				return 0, err
			}
			continue
		case rest != "":
			return 0, set(s, strings.TrimPrefix(rest, "="))
		case i+1 < len(args):
			return 1, set(s, args[i+1])
		default:
			return 0, fmt.Errorf("flag needs an argument: %q in -%s", s.short, group)
		}
	}
	return 0, nil
}

func findLong(specs []flagSpec, name string) (flagSpec, bool) {
	for _, s := range specs {
		if s.long == name {
			return s, true
		}
	}
	return flagSpec{}, false
}

func findShort(specs []flagSpec, c byte) (flagSpec, bool) {
	for _, s := range specs {
		if s.short != 0 && s.short == c {
			return s, true
		}
	}
	return flagSpec{}, false
}

func flagNames(s flagSpec) string {
	if s.short != 0 {
		return "-" + string(s.short) + ", --" + s.long
	}
	return "--" + s.long
}
