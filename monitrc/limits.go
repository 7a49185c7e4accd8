package monitrc

import (
	"strconv"
	"strings"
)

// Units of sizes (bytes) and times (seconds).
var (
	sizeUnits = map[string]float64{"b": 1, "byte": 1, "bytes": 1, "kb": 1 << 10, "kilobyte": 1 << 10,
		"kilobytes": 1 << 10, "mb": 1 << 20, "megabyte": 1 << 20, "megabytes": 1 << 20, "gb": 1 << 30,
		"gigabyte": 1 << 30, "gigabytes": 1 << 30, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
	timeUnits = map[string]float64{"second": 1, "seconds": 1, "s": 1, "minute": 60, "minutes": 60,
		"hour": 3600, "hours": 3600, "day": 86400, "days": 86400}
	operators = map[string]string{">": ">", "gt": ">", "greater": ">", "<": "<", "lt": "<", "less": "<",
		"==": "=", "eq": "=", "equal": "=", "!=": "!=", "ne": "!=", "notequal": "!=", "<>": "!=", "changed": "!="}
)

// operator reads an optional comparison (none means equal, as monit).
func (p *parser) operator() string {
	if p.peek().kind == tWord {
		if op, ok := operators[p.peek().low]; ok {
			p.pos++
			return op
		}
	}
	return "="
}

// limit reads a number with an optional percent sign or unit, in units
// (nil: a plain number).
func (p *parser) limit(t *Test, units map[string]float64) error {
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
	case !t.Percent && units != nil && p.peek().kind == tWord && units[p.peek().low] != 0:
		t.Limit *= units[p.next().low]
	}
	return nil
}

// compare reads `[OPERATOR] N [unit|%]` of a timestamp, size, space or
// inode test.
func (p *parser) compare(t *Test, what string, units map[string]float64) error {
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
	kb := map[string]float64{}
	for k, v := range sizeUnits {
		kb[k] = v / 1024
	}
	units := map[string]map[string]float64{"memory": kb, "totalmem": kb, "swap": kb}[t.Resource]
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
