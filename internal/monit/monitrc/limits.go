package monitrc

import (
	"strconv"
	"strings"
)

// sizeUnit is the bytes in a size unit's word, 0 for none.
func sizeUnit(w string) float64 {
	switch w {
	case "b", "byte", "bytes":
		return 1
	case "kb", "kilobyte", "kilobytes", "k":
		return 1 << 10
	case "mb", "megabyte", "megabytes", "m":
		return 1 << 20
	case "gb", "gigabyte", "gigabytes", "g":
		return 1 << 30
	}
	return 0
}

// kbUnit is the kilobytes in a size unit's word, 0 for none.
func kbUnit(w string) float64 { return sizeUnit(w) / 1024 }

// timeUnit is the seconds in a time unit's word, 0 for none.
func timeUnit(w string) float64 {
	switch w {
	case "second", "seconds", "s":
		return 1
	case "minute", "minutes":
		return 60
	case "hour", "hours":
		return 3600
	case "day", "days":
		return 86400
	}
	return 0
}

// operator reads an optional comparison (none means equal, as monit).
func (p *parser) operator() string {
	if p.peek().kind != tWord {
		return "="
	}
	op := ""
	switch p.peek().low {
	case ">", "gt", "greater":
		op = ">"
	case "<", "lt", "less":
		op = "<"
	case "==", "eq", "equal":
		op = "="
	case "!=", "ne", "notequal", "<>", "changed":
		op = "!="
	default:
		return "="
	}
	p.pos++
	return op
}

// limit reads a number with an optional percent sign or unit, in units
// (nil: a plain number).
func (p *parser) limit(t *Test, units func(string) float64) error {
	nt := p.next()
	num := strings.TrimSuffix(nt.text, "%")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || nt.kind != tWord || v < 0 {
		return p.errf(nt, "syntax error: expected a number, got %q", nt.text)
	}
	t.Limit, t.Percent = v, strings.HasSuffix(nt.text, "%")
	switch {
	case p.is("%", "percent"):
		p.pos++
		t.Percent = true
	case !t.Percent && units != nil && p.peek().kind == tWord && units(p.peek().low) != 0:
		t.Limit *= units(p.next().low)
	}
	return nil
}

// compare reads `[OPERATOR] N [unit|%]` of a timestamp, size, space or
// inode test.
func (p *parser) compare(t *Test, what string, units func(string) float64) error {
	t.Operator = p.operator()
	if err := p.limit(t, units); err != nil {
		return err
	}
	if t.Percent && t.Kind != TestSpace && t.Kind != TestInode {
		return p.errf(p.toks[p.pos-1], "a %s test takes no percentage", what)
	}
	t.Text = what + t.Operator + strconv.FormatFloat(t.Limit, 'f', -1, 64)
	return nil
}

// resource reads `(>|<|=|!=) N [unit|%]` after the resource's name.
// Memory and swap limits are kept in kilobytes, as monit keeps them.
func (p *parser) resource(t *Test) error {
	t.Operator = p.operator()
	var units func(string) float64
	switch t.Resource {
	case "memory", "totalmem", "swap":
		units = kbUnit
	}
	if err := p.limit(t, units); err != nil {
		return err
	}
	if units != nil && !t.Percent {
		t.Limit = float64(int64(t.Limit)) // monit keeps whole kilobytes
	}
	switch t.Resource {
	case "cpu", "totalcpu", "cpuuser", "cpusystem", "cpuwait":
		if !t.Percent {
			return p.errf(p.toks[p.pos-1], "a cpu test takes a percentage")
		}
	case "children", "loadavg1", "loadavg5", "loadavg15":
		if t.Percent {
			return p.errf(p.toks[p.pos-1], "a %s test takes no percentage", t.Resource)
		}
	}
	t.Text = t.Resource + t.Operator + strconv.FormatFloat(t.Limit, 'f', -1, 64)
	if t.Percent {
		t.Text += "%"
	}
	return nil
}
