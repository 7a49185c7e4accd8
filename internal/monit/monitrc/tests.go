package monitrc

import (
	"slices"
	"strconv"
	"strings"
)

// resourceName is the resource a resource test's word (its parts joined,
// blanks removed) names, as monit's messages name it, false for none.
func resourceName(w string) (string, bool) {
	switch w {
	case "cpu", "totalcpu", "swap", "memory", "totalmem":
		return w, true
	case "cpu(user)", "cpu(us)", "cpu(usr)":
		return "cpuuser", true
	case "cpu(system)", "cpu(sy)", "cpu(sys)":
		return "cpusystem", true
	case "cpu(wait)", "cpu(wa)":
		return "cpuwait", true
	case "mem":
		return "memory", true
	case "totalmemory":
		return "totalmem", true
	case "children", "child":
		return "children", true
	case "load", "loadavg", "loadavg(1)", "loadavg(1m)", "loadavg(1min)":
		return "loadavg1", true
	case "loadavg(5)", "loadavg(5m)", "loadavg(5min)":
		return "loadavg5", true
	case "loadavg(15)", "loadavg(15m)", "loadavg(15min)":
		return "loadavg15", true
	}
	return "", false
}

// systemResources are those a check system may test.
var systemResources = []string{"cpuuser", "cpusystem", "cpuwait", "memory", "swap", "loadavg1", "loadavg5", "loadavg15"}

// processResources are those a check process may test.
var processResources = []string{"cpu", "totalcpu", "memory", "totalmem", "children", "loadavg1", "loadavg5", "loadavg15"}

// resourceWord reads a resource name, which may be written in parts:
// "loadavg (5min)", "cpu usage (user)" (usage is noise).
func (p *parser) resourceWord() (string, bool) {
	t := p.peek()
	if p.eof() || t.kind != tWord {
		return "", false
	}
	w := t.low
	if (w == "cpu" || w == "loadavg" || w == "load") && p.pos+1 < len(p.toks) && strings.HasPrefix(p.toks[p.pos+1].low, "(") {
		w += p.toks[p.pos+1].low
		if _, ok := resourceName(strings.ReplaceAll(w, " ", "")); ok {
			p.pos++
		}
	}
	r, ok := resourceName(strings.ReplaceAll(w, " ", ""))
	if ok {
		p.pos++
	}
	return r, ok
}

// ifTest reads `if CONDITION [rate] then ACTION [else if succeeded [rate]
// then ACTION]`, or `ignore [not] match ...`.
func (p *parser) ifTest(at token) error {
	tst := Test{Line: at.line, Timeout: DefaultConnTimeout}
	var err error
	recovery := true // whether the grammar allows an else branch
	switch {
	case at.low == "ignore":
		tst.Kind, tst.Ignore = TestMatch, true
		return p.addTest(tst, p.match(&tst))
	case p.is("failed"):
		p.pos++
		err = p.failed(&tst)
	case p.is("not") && p.peekAt(1, "exist"):
		p.pos += 2
		tst.Kind, tst.Text = TestExist, "not exist"
	case p.is("not", "match", "matching"):
		tst.Kind, recovery = TestMatch, false
		err = p.match(&tst)
	case p.is("changed"):
		p.pos++
		tst.Changed, recovery = true, false
		err = p.changed(&tst)
	case p.is("timestamp"):
		p.pos++
		tst.Kind = TestTimestamp
		err = p.compare(&tst, "timestamp", timeUnit)
	case p.is("size"):
		p.pos++
		tst.Kind = TestSize
		err = p.compare(&tst, "size", sizeUnit)
	case p.is("space"):
		p.pos++
		tst.Kind = TestSpace
		err = p.compare(&tst, "space", sizeUnit)
	case p.is("inode", "inodes"):
		p.pos++
		tst.Kind = TestInode
		err = p.compare(&tst, "inode", nil)
	case p.peek().kind == tWord && isNumber(p.peek().text):
		tst.Kind, recovery = TestRestarts, false
		err = p.restarts(&tst)
	default:
		r, ok := p.resourceWord()
		if !ok {
			return p.unexpectedOf("a test after if", []string{"failed", "not", "match", "changed", "timestamp", "size",
				"space", "inode", "cpu", "totalcpu", "memory", "totalmem", "swap", "children", "loadavg"}, "tests")
		}
		tst.Kind, tst.Resource = TestResource, r
		err = p.resource(&tst)
	}
	if err != nil {
		return err
	}
	if tst.Kind != TestConnection { // a connection test reads its rate among its options
		if err := p.cycles(&tst.Failures, &tst.Cycles); err != nil {
			return err
		}
		if _, err := p.expect("then"); err != nil {
			return err
		}
	}
	if tst.Action, err = p.action(tst.Kind == TestRestarts); err != nil {
		return err
	}
	tst.Recovery = Action{Kind: ActAlert}
	if !recovery || tst.Changed || tst.Kind == TestMatch {
		tst.Recovery = Action{} // a change is not recovered from (monit's ACTION_IGNORE)
	}
	if p.is("else") {
		if !recovery {
			return p.errf(p.peek(), "syntax error: a %s test has no else branch", tst.describe())
		}
		p.pos++
		if _, err := p.expect("if"); err != nil {
			return err
		}
		if _, err := p.expect("succeeded", "passed", "recovered"); err != nil {
			return err
		}
		if err := p.cycles(&tst.RecoveryFailures, &tst.RecoveryCycles); err != nil {
			return err
		}
		if _, err := p.expect("then"); err != nil {
			return err
		}
		if tst.Recovery, err = p.action(false); err != nil {
			return err
		}
	}
	return p.addTest(tst, nil)
}

// addTest adds t to the check being read, if its type allows it.
func (p *parser) addTest(t Test, err error) error {
	if err != nil {
		return err
	}
	if !slices.Contains(AllowedTests(p.svc.Type), t.Kind) {
		return &Error{File: p.file, Line: t.Line, Msg: "syntax error: a " + t.describe() +
			" test is not allowed in a check " + strings.ToLower(p.svc.Type.Word())}
	}
	if t.Kind == TestResource {
		allowed := processResources
		if p.svc.Type == TypeSystem {
			allowed = systemResources
		}
		if !slices.Contains(allowed, t.Resource) {
			return &Error{File: p.file, Line: t.Line, Msg: "syntax error: resource " + t.Resource +
				" is not allowed in a check " + strings.ToLower(p.svc.Type.Word())}
		}
	}
	p.svc.Tests = append(p.svc.Tests, t)
	return nil
}

// describe names the kind of t for messages.
func (t Test) describe() string {
	return [...]string{"connection", "resource", "restart rate", "not exist", "permission", "uid", "gid",
		"timestamp", "size", "checksum", "match", "pid", "ppid", "icmp", "space", "inode", "fsflags"}[t.Kind]
}

func (p *parser) peekAt(off int, word string) bool {
	i := p.pos + off
	return i < len(p.toks) && p.toks[i].kind == tWord && p.toks[i].low == word
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// cycles reads an optional rate, `N cycles` (N of N) or `N M cycles` (N
// times within M cycles), into failures and cycles.
func (p *parser) cycles(failures, cycles *int) error {
	if p.peek().kind != tWord || !isNumber(p.peek().text) {
		return nil
	}
	n, _, err := p.number("a number of cycles")
	if err != nil {
		return err
	}
	m := n
	if !p.is("cycle", "cycles") {
		if m, _, err = p.number("a number of cycles"); err != nil {
			return err
		}
	}
	if _, err := p.expect("cycle", "cycles"); err != nil {
		return err
	}
	if m < 1 || m > 64 {
		return p.errf(p.toks[p.pos-1], "the number of cycles must be between 1 and 64")
	}
	if n < 1 || n > m {
		return p.errf(p.toks[p.pos-1], "%d times within %d cycles is impossible", n, m)
	}
	*failures, *cycles = n, m
	return nil
}

// failed reads what follows `if failed`: a connection test, or a
// permission, uid, gid, checksum or icmp test.
func (p *parser) failed(t *Test) error {
	switch {
	case p.is("permission", "perm"):
		p.pos++
		w, err := p.word("a permission after permission")
		if err != nil {
			return err
		}
		perm, perr := strconv.ParseUint(w.text, 8, 32)
		if perr != nil || perm > 0o7777 {
			return p.errf(w, "permission statements must have an octal value between 0 and 7777")
		}
		t.Kind, t.Perm, t.Text = TestPermission, uint32(perm), "permission "+w.text
		return nil
	case p.is("uid", "gid"):
		kind := map[string]TestKind{"uid": TestUID, "gid": TestGID}[p.next().low]
		w, err := p.word("a user or group")
		if err != nil {
			return err
		}
		t.Kind, t.Owner, t.Text = kind, w.text, map[TestKind]string{TestUID: "uid ", TestGID: "gid "}[kind]+w.text
		return nil
	case p.is("md5", "sha1", "checksum"):
		t.Kind = TestChecksum
		return p.checksum(t)
	case p.is("icmp"):
		p.pos++
		t.Kind, t.Text, t.Count = TestICMP, "icmp", 3
		for p.is("type", "echo", "count", "timeout") {
			w := p.next()
			switch w.low {
			case "type":
				if _, err := p.expect("echo"); err != nil {
					return err
				}
			case "count":
				n, _, err := p.number("a count")
				if err != nil {
					return err
				}
				t.Count = max(n, 1)
			case "timeout":
				d, err := p.seconds()
				if err != nil {
					return err
				}
				t.Timeout = d
			}
		}
		return nil
	}
	t.Kind = TestConnection
	return p.connection(t)
}

// checksum reads `[md5|sha1] checksum [expect HASH]`.
func (p *parser) checksum(t *Test) error {
	if p.is("md5", "sha1") {
		t.Hash = p.next().low
	}
	if _, err := p.expect("checksum"); err != nil {
		return err
	}
	if !t.Changed && p.is("expect") {
		p.pos++
		w, err := p.word("a checksum after expect")
		if err != nil {
			return err
		}
		t.Sum = strings.ToLower(w.text)
		if t.Hash == "" {
			t.Hash = map[int]string{32: "md5", 40: "sha1"}[len(t.Sum)]
		}
		if (t.Hash == "md5" && len(t.Sum) != 32) || (t.Hash == "sha1" && len(t.Sum) != 40) || t.Hash == "" {
			return p.errf(w, "invalid checksum %q", w.text)
		}
	}
	t.Text = "checksum"
	return nil
}

// changed reads what follows `if changed`.
func (p *parser) changed(t *Test) error {
	w := p.peek()
	switch {
	case p.is("timestamp"):
		t.Kind = TestTimestamp
	case p.is("size"):
		t.Kind = TestSize
	case p.is("md5", "sha1", "checksum"):
		t.Kind = TestChecksum
		return p.checksum(t)
	case p.is("pid"):
		t.Kind = TestPID
	case p.is("ppid"):
		t.Kind = TestPPID
	case p.is("fsflag", "fsflags"):
		t.Kind = TestFsflag
	default:
		return p.unexpected("timestamp, size, checksum, pid, ppid or fsflags after changed")
	}
	p.pos++
	t.Text = "changed " + w.low
	return nil
}

// match reads `[not] match REGEX|PATH`.
func (p *parser) match(t *Test) error {
	if p.is("not") {
		p.pos++
		t.Not = true
	}
	if _, err := p.expect("match", "matching"); err != nil {
		return err
	}
	w, err := p.word("a regular expression or a file after match")
	if err != nil {
		return err
	}
	t.Kind, t.Pattern = TestMatch, w.text
	t.PatternFile = w.kind == tWord && strings.HasPrefix(w.text, "/")
	t.Text = "match " + w.text
	if t.Not {
		t.Text = "not " + t.Text
	}
	return nil
}

// restarts reads `N restart(s) [within] M cycle(s) then`.
func (p *parser) restarts(t *Test) error {
	n, _, err := p.number("a number of restarts")
	if err != nil {
		return err
	}
	if _, err := p.expect("restart", "restarts"); err != nil {
		return err
	}
	m, _, err := p.number("a number of cycles")
	if err != nil {
		return err
	}
	if _, err := p.expect("cycle", "cycles"); err != nil {
		return err
	}
	t.Failures, t.Cycles = n, m
	t.Text = strconv.Itoa(n) + " restarts within " + strconv.Itoa(m) + " cycles"
	return nil
}

// action reads ACTION after then; timeout is allowed for restart rates.
func (p *parser) action(rate bool) (Action, error) {
	words := []string{"alert", "restart", "start", "stop", "unmonitor", "exec", "execute"}
	if rate {
		words = append(words, "timeout")
	}
	w, err := p.expect(words...)
	if err != nil {
		return Action{}, err
	}
	a := Action{Kind: ActionKind(w.low)}
	if w.low == "execute" {
		a.Kind = ActExec
	}
	if a.Kind == ActExec {
		if a.Exec, err = p.program(); err != nil {
			return Action{}, err
		}
	}
	return a, nil
}
