package monitrc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// StemcellRoot is the BOSH root that paths in control files are written for.
const StemcellRoot = "/var/vcap"

// maxIncludes bounds the files one load reads, as monit bounds its stack.
const maxIncludes = 1024

// Paths are where Load looks, under a BOSH root.
type Paths struct{ Root string }

// Monitrc is the stemcell's control file.
func (p Paths) Monitrc() string { return filepath.Join(p.Root, "bosh", "etc", "monitrc") }

// JobFiles is the glob of the job files the agent installs.
func (p Paths) JobFiles() string { return filepath.Join(p.Root, "monit", "job", "*.monitrc") }

// UserFile is the agent's credentials file.
func (p Paths) UserFile() string { return filepath.Join(p.Root, "monit", "monit.user") }

// Map rewrites a stemcell path (/var/vcap/...) to the same place under the
// root, so that a test root or a relocated root works with files rendered
// for a stemcell.
func (p Paths) Map(path string) string {
	root := filepath.Clean(p.Root)
	if root == StemcellRoot || !strings.HasPrefix(path, StemcellRoot+"/") {
		return path
	}
	return filepath.Join(root, strings.TrimPrefix(path, StemcellRoot+"/"))
}

// mapProgram maps each of a program's words that is a stemcell path, so
// that "/var/vcap/jobs/JOB/bin/ctl start" runs the root's own script. Words
// that only contain such a path (a shell command string) stay as written.
func (p Paths) mapProgram(prog *Program) {
	if prog == nil {
		return
	}
	for i, w := range prog.Argv {
		if !strings.ContainsAny(w, " \t\n") {
			prog.Argv[i] = p.Map(w)
		}
	}
}

// Load reads the control files of a BOSH root: ROOT/bosh/etc/monitrc and
// its includes when it exists; else the agent's job files
// (ROOT/monit/job/*.monitrc); else each job's own monit file
// (ROOT/jobs/*/monit and ROOT/jobs/*/*.monit). The last two get the
// stemcell's httpd settings. found is false when there is no control file
// at all. Problems in single files are in Config.Problems; err is set only
// when the main control file exists but cannot be read.
func Load(root string) (cfg *Config, found bool, err error) { return LoadSince(root, Since{}) }

// Since is what was in force before a load: it decides which of two
// definitions of one name stays when control files conflict, and what a
// file that became invalid is replaced with.
type Since struct {
	// Previous is the configuration in force (a reload), or nil.
	Previous *Config
	// Owners maps a lower-cased service name to the file that defined it
	// when it was last in force, for a fresh start that has no Previous
	// (the daemon keeps it across restarts). Previous's services count
	// first.
	Owners map[string]string
}

// owner returns the file that defined name when it was last in force.
func (s Since) owner(name string) string {
	if s.Previous != nil {
		if svc, ok := s.Previous.Lookup(name); ok {
			return svc.File
		}
	}
	return s.Owners[strings.ToLower(name)]
}

// LoadSince is Load after since. When two files define the same service
// name, the file that introduces the conflict is refused (all its
// services, with a problem at its own check line) and the definition in
// force stays: the one in the file that defined the name before, else (a
// fresh start without owners) the first in monit's order. A file that was
// in force and no longer loads keeps its previous services, with a problem.
func LoadSince(root string, since Since) (cfg *Config, found bool, err error) {
	p := Paths{Root: root}
	if _, serr := os.Stat(p.Monitrc()); serr == nil {
		cfg, err := loadFile(p.Monitrc(), root, since)
		return cfg, err == nil, err
	}
	var files []string
	jobFiles, _ := filepath.Glob(p.JobFiles())
	if len(jobFiles) > 0 {
		slices.Reverse(jobFiles) // monit parses a glob's files in reverse order
		files = jobFiles
	} else {
		own, _ := filepath.Glob(filepath.Join(root, "jobs", "*", "monit"))
		labelled, _ := filepath.Glob(filepath.Join(root, "jobs", "*", "*.monit"))
		files = append(own, labelled...)
		slices.Sort(files)
	}
	if len(files) == 0 {
		return nil, false, nil
	}
	l := &loader{paths: p, cfg: &Config{Cycle: DefaultCycle}, since: since}
	l.cfg.HTTPD = &HTTPD{Port: 2822, Address: "127.0.0.1", Cleartext: []string{p.UserFile()}}
	for _, f := range files {
		l.file(f, 0)
	}
	l.finish()
	return l.cfg, true, nil
}

// LoadFile reads the control file at path and everything it includes.
// Paths written for /var/vcap are mapped under root.
func LoadFile(path, root string) (*Config, error) { return loadFile(path, root, Since{}) }

func loadFile(path, root string, since Since) (*Config, error) {
	if _, err := os.ReadFile(path); err != nil {
		return nil, fmt.Errorf("read control file: %w", err)
	}
	l := &loader{paths: Paths{Root: root}, cfg: &Config{File: path, Cycle: DefaultCycle}, since: since}
	l.file(path, 0)
	l.finish()
	return l.cfg, nil
}

type loader struct {
	paths Paths
	cfg   *Config
	since Since
	read  int
}

func (l *loader) problem(err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Msg: err.Error()}
	}
	l.cfg.Problems = append(l.cfg.Problems, e)
}

// file reads one control file; its includes are read in place (between
// the services before and after each), each glob's files in reverse
// order, as monit's include stack does.
func (l *loader) file(path string, depth int) {
	l.read++
	if l.read > maxIncludes || depth > 16 {
		l.problem(&Error{File: path, Msg: "include files are nested too deeply"})
		return
	}
	src, err := os.ReadFile(path)
	if err != nil {
		l.problem(&Error{File: path, Msg: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))})
		return
	}
	f, err := Parse(path, src)
	if err != nil {
		l.problem(err)
		l.keepPrevious(path)
		return
	}
	c := l.cfg
	if f.Cycle > 0 {
		c.Cycle = f.Cycle
	}
	if f.HTTPD != nil {
		h := *f.HTTPD
		h.Cleartext = slices.Clone(h.Cleartext)
		for i, cf := range h.Cleartext {
			h.Cleartext[i] = l.paths.Map(cf)
		}
		c.HTTPD = &h
	}
	c.Alerts = append(c.Alerts, f.Alerts...)
	if f.MailServer != nil && c.MailServer == nil {
		c.MailServer = f.MailServer
	}
	next := 0 // the next include to read
	for i, s := range f.Services {
		for ; next < len(f.Includes) && f.IncludeAt[next] <= i; next++ {
			l.include(path, f.Includes[next], depth)
		}
		l.service(s)
	}
	for ; next < len(f.Includes); next++ {
		l.include(path, f.Includes[next], depth)
	}
}

// service adds a service read from a file, its paths mapped under the
// root, unless it breaks monit's rules for its type.
func (l *loader) service(s *Service) {
	if s.PidFile != "" {
		s.PidFile = l.paths.Map(s.PidFile)
	}
	if s.Path != "" {
		s.Path = l.paths.Map(s.Path)
	}
	l.paths.mapProgram(s.Start)
	l.paths.mapProgram(s.Stop)
	for i := range s.Tests {
		t := &s.Tests[i]
		l.paths.mapProgram(t.Action.Exec)
		l.paths.mapProgram(t.Recovery.Exec)
		if t.Socket != "" {
			t.Socket = l.paths.Map(t.Socket)
		}
	}
	if err := checkService(s); err != nil {
		l.problem(err)
		return
	}
	l.cfg.Services = append(l.cfg.Services, s)
}

// include reads the files an include pattern of the file at path matches,
// in reverse glob order as monit's include stack does.
func (l *loader) include(path, pat string, depth int) {
	pat = l.paths.Map(pat)
	if !filepath.IsAbs(pat) {
		pat = filepath.Join(filepath.Dir(path), pat)
	}
	matches, err := filepath.Glob(pat)
	if err != nil {
		l.problem(&Error{File: path, Msg: fmt.Sprintf("include %s: %v", pat, err)})
		return
	}
	slices.Reverse(matches)
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Mode().IsRegular() {
			l.file(m, depth+1)
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.problem(&Error{File: m, Msg: err.Error()})
		}
	}
}

// keepPrevious puts back the services a file had in the configuration in
// force, when its new version does not load: what runs stays as it was.
func (l *loader) keepPrevious(path string) {
	prev := l.since.Previous
	if prev == nil {
		return
	}
	n := 0
	for _, s := range prev.Services {
		if s.File == path {
			l.cfg.Services = append(l.cfg.Services, s)
			n++
		}
	}
	if n > 0 {
		l.problem(&Error{File: path, Msg: "the new version does not load: its previous services stay in force"})
	}
}

// checkService applies the per-service rules monit checks after parsing.
func checkService(s *Service) error {
	bad := func(msg string) error { return &Error{File: s.File, Line: s.Line, Msg: msg} }
	switch s.Type {
	case TypeProcess:
		if s.PidFile == "" {
			return bad(fmt.Sprintf("check process %s needs a pidfile", s.Name))
		}
	case TypeFile, TypeDirectory, TypeFilesystem, TypeFifo:
		if s.Path == "" {
			return bad(fmt.Sprintf("check %s %s needs a path", strings.ToLower(s.Type.Word()), s.Name))
		}
	case TypeHost:
		if s.Address == "" {
			return bad(fmt.Sprintf("check host %s needs an address", s.Name))
		}
	}
	return nil
}

// finish refuses the files that introduce name conflicts, then drops
// unknown dependencies and dependency loops, each with a problem naming
// file and line.
func (l *loader) finish() {
	c := l.cfg
	for {
		keep, drop, ok := l.conflict()
		if !ok {
			break
		}
		l.problem(&Error{File: drop.File, Line: drop.Line, Msg: fmt.Sprintf(
			"service name conflict, %s already defined at %s:%d: none of this file's services is loaded",
			drop.Name, keep.File, keep.Line)})
		c.Services = slices.DeleteFunc(c.Services, func(s *Service) bool { return s.File == drop.File })
	}
	for {
		bad := badDependencies(c.Services)
		if len(bad) == 0 {
			return
		}
		for _, e := range bad {
			l.cfg.Problems = append(l.cfg.Problems, e.err)
		}
		c.Services = slices.DeleteFunc(c.Services, func(s *Service) bool {
			return slices.ContainsFunc(bad, func(b badDep) bool { return b.svc == s })
		})
	}
}

// conflict finds the first name defined twice (in config order) and says
// which definition stays and which file is refused: the file that
// introduces the conflict, which is the later one unless the earlier one's
// file is not the one that defined the name before. Two definitions in one
// file refuse that file.
func (l *loader) conflict() (keep, drop *Service, ok bool) {
	first := map[string]*Service{}
	for _, s := range l.cfg.Services {
		k := strings.ToLower(s.Name)
		a, seen := first[k]
		if !seen {
			first[k] = s
			continue
		}
		owner := l.since.owner(s.Name)
		if a.File != s.File && owner != "" && sameFile(owner, s.File) && !sameFile(owner, a.File) {
			return s, a, true
		}
		return a, s, true
	}
	return nil, nil, false
}

// sameFile reports whether two control files are the same job's: the same
// path, or the agent's NNNN_JOB.monitrc under another number (the agent
// numbers the files again at each deploy).
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	key := func(p string) string {
		return filepath.Join(filepath.Dir(p), TrimAgentNumber(filepath.Base(p)))
	}
	return strings.HasSuffix(a, ".monitrc") && key(a) == key(b)
}

// TrimAgentNumber removes the agent's NNNN_ prefix (four digits and an
// underscore) from a control file's name.
func TrimAgentNumber(name string) string {
	if len(name) < 5 || name[4] != '_' {
		return name
	}
	for _, c := range name[:4] {
		if c < '0' || c > '9' {
			return name
		}
	}
	return name[5:]
}
