package job

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vigil-bosh/vigil/internal/suggest"
)

// collector gathers the errors and warnings of one file. During decoding it
// also records the line of every field it visits, so that later checks can
// point at the right line.
type collector struct {
	file  string
	lines map[string]int  // field path → line of its value (or list entry)
	bad   map[string]bool // fields that already failed to decode
	errs  ErrorList
	warns []Warning
}

func newCollector(file string, lines map[string]int) *collector {
	return &collector{file: file, lines: lines, bad: map[string]bool{}}
}

// fail records an error at an explicit line.
func (c *collector) fail(line int, field string, err error, format string, args ...any) {
	c.errs = append(c.errs, &ConfigError{File: c.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...), Err: err})
	c.bad[field] = true
}

// check records a validation error at the field's line, unless the field
// already failed to decode (one error per cause).
func (c *collector) check(field string, err error, format string, args ...any) {
	if !c.bad[field] {
		c.fail(lineOf(c.lines, field), field, err, format, args...)
	}
}

func (c *collector) warn(line int, field, format string, args ...any) {
	c.warns = append(c.warns, Warning{File: c.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// lineOf returns the line of field, or of its nearest recorded parent
// ("a.b[2].c" → "a.b[2]" → "a.b" → "a"), or 0.
func lineOf(lines map[string]int, field string) int {
	for field != "" {
		if line, ok := lines[field]; ok {
			return line
		}
		field = field[:max(strings.LastIndexAny(field, ".["), 0)]
	}
	return 0
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func index(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge"
}

// describe names a node's kind for type errors.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// typeError reports that value (found at line) is not what field needs.
func (c *collector) typeError(line int, value *yaml.Node, field, want string) {
	c.fail(line, field, nil, "expected %s, got %s", want, describe(value))
}

// pair is one mapping entry.
type pair struct{ key, val *yaml.Node }

// pairs returns the entries of mapping n in the order they apply: explicit
// keys first, then keys brought in by merge keys (<<) that are not already
// present, earlier merge sources first, as yaml.v3 decodes them. Duplicate
// keys are errors, as in yaml.v3. ok is false when n is null or not a mapping
// (the latter is reported).
func (c *collector) pairs(n *yaml.Node, field string) (ps []pair, ok bool) {
	line, n := n.Line, resolve(n)
	if isNull(n) {
		return nil, false
	}
	if n.Kind != yaml.MappingNode {
		c.typeError(line, n, field, "a mapping")
		return nil, false
	}
	type keyID struct {
		kind  yaml.Kind
		value string
	}
	first := map[keyID]int{} // key → line where it is first defined
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if line, dup := first[keyID{k.Kind, k.Value}]; dup {
			c.fail(k.Line, join(field, k.Value), nil, "mapping key %q already defined at line %d", k.Value, line)
			continue
		}
		first[keyID{k.Kind, k.Value}] = k.Line
	}
	return c.merged(n, field, map[string]bool{}, map[*yaml.Node]bool{}, nil), true
}

// merged appends n's entries whose keys are not in seen, then those of its
// merge sources. visited keeps each source to one expansion, which bounds
// the work on documents that merge the same anchor many times.
func (c *collector) merged(n *yaml.Node, field string, seen map[string]bool, visited map[*yaml.Node]bool, out []pair) []pair {
	visited[n] = true
	var sources []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if !isMergeKey(k) {
			if !seen[k.Value] {
				seen[k.Value] = true
				out = append(out, pair{k, v})
			}
			continue
		}
		v = resolve(v)
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		for _, s := range items {
			if s = resolve(s); s.Kind != yaml.MappingNode {
				c.fail(k.Line, field, nil, "map merge requires map or sequence of maps as the value")
				break
			}
			sources = append(sources, s)
		}
	}
	for _, s := range sources {
		if !visited[s] {
			out = c.merged(s, field, seen, visited, out)
		}
	}
	return out
}

// items returns the entries of sequence n, recording their lines; null gives
// none and other kinds are reported.
func (c *collector) items(n *yaml.Node, field string) []*yaml.Node {
	line, n := n.Line, resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		c.typeError(line, n, field, "a list")
		return nil
	}
	for i, item := range n.Content {
		c.lines[index(field, i)] = item.Line
	}
	return n.Content
}

// scalar decodes n into a T with yaml.v3's own rules, so values are read as
// bpm reads them (any scalar is a string; yes/no are booleans; 0x10 is an
// integer). Null gives the zero value and ok=false; other kinds are reported.
func scalar[T any](c *collector, n *yaml.Node, field, want string) (v T, ok bool) {
	line, n := n.Line, resolve(n)
	if isNull(n) {
		return v, false
	}
	if n.Kind != yaml.ScalarNode {
		c.typeError(line, n, field, want)
		return v, false
	}
	if err := n.Decode(&v); err != nil {
		c.fail(line, field, nil, "expected %s, got %q", want, n.Value)
		return v, false
	}
	return v, true
}

// optional is scalar for pointer fields: nil when null or invalid.
func optional[T any](c *collector, n *yaml.Node, field, want string) *T {
	if v, ok := scalar[T](c, n, field, want); ok {
		return &v
	}
	return nil
}

func str(c *collector, n *yaml.Node, field string) string {
	s, _ := scalar[string](c, n, field, "a string")
	return s
}

func boolean(c *collector, n *yaml.Node, field string) bool {
	b, _ := scalar[bool](c, n, field, "true or false")
	return b
}

func strs(c *collector, n *yaml.Node, field string) []string {
	var out []string
	for i, item := range c.items(n, field) {
		out = append(out, str(c, item, index(field, i)))
	}
	return out
}

// strMap decodes a string→string mapping such as env.
func strMap(c *collector, n *yaml.Node, field string) map[string]string {
	ps, ok := c.pairs(n, field)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		k, _ := scalar[string](c, p.key, field, "a string key")
		sub := join(field, k)
		c.lines[sub] = p.val.Line
		out[k] = secret(c, p.val, sub)
	}
	return out
}

// secret is str for a value that may be a secret (env, probe headers): its
// errors never quote the value.
func secret(c *collector, n *yaml.Node, field string) string {
	r := resolve(n)
	if isNull(r) || r.Kind != yaml.ScalarNode {
		return str(c, n, field) // the error names only the kind
	}
	var s string
	if err := r.Decode(&s); err != nil {
		c.fail(n.Line, field, nil, "expected a string, got a %s value (not shown: it may be a secret)", r.ShortTag())
	}
	return s
}

// field decodes the value n at path into part of a T.
type field[T any] func(c *collector, n *yaml.Node, path string, into *T)

// keyTable lists the known keys of one mapping level and how to decode
// each. It is a list, not a map: a package-level list of constant names
// and functions is laid out by the linker, where a map would be built by
// code at the start of every vigil process (every init, every command).
type keyTable[T any] []keyField[T]

// keyField is one known key and how its value is decoded.
type keyField[T any] struct {
	name   string
	decode field[T]
}

// find returns the decoder of key name, or false when the key is unknown.
func (t keyTable[T]) find(name string) (field[T], bool) {
	for _, k := range t {
		if k.name == name {
			return k.decode, true
		}
	}
	return nil, false
}

// decodeMap decodes mapping n with keys, warning about unknown keys (with a
// suggestion when one is close). It reports whether n was a mapping.
func decodeMap[T any](c *collector, n *yaml.Node, path string, keys keyTable[T], into *T) bool {
	ps, ok := c.pairs(n, path)
	for _, p := range ps {
		if p.key.Kind != yaml.ScalarNode {
			c.warn(p.key.Line, path, "ignored key that is not a string but %s", describe(p.key))
			continue
		}
		name := p.key.Value
		sub := join(path, name)
		decode, known := keys.find(name)
		if !known {
			c.warn(p.key.Line, sub, "unknown key %q%s", name, didYouMean(name, keys))
			continue
		}
		c.lines[sub] = p.val.Line
		decode(c, p.val, sub, into)
	}
	return ok
}

// didYouMean returns ` (did you mean "k"?)` for the known key closest to name,
// when one is close enough to be a slip (see suggest.Closest).
func didYouMean[T any](name string, keys keyTable[T]) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	slices.Sort(names)
	if best, ok := suggest.Closest(name, names); ok {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}
