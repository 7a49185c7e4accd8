// Package monitrc reads monit control files: the stemcell's monitrc (daemon
// cycle, httpd, includes, alerts) and the job files releases ship, in the
// subset of monit 5.2.5's grammar that releases use. It is pure apart from
// Load, which reads files. Errors name file and line.
package monitrc

import (
	"fmt"
	"strings"
	"time"
)

// Defaults of monit 5.2.5.
const (
	DefaultExecTimeout = 30 * time.Second // start and stop programs
	DefaultConnTimeout = 5 * time.Second  // connection tests
	DefaultCycle       = 30 * time.Second // without set daemon
)

// Error is a problem at a place in a control file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Config is everything the control files say.
type Config struct {
	File       string        // the main control file ("" when job files were read alone)
	Cycle      time.Duration // set daemon
	HTTPD      *HTTPD        // nil without set httpd
	Alerts     []string      // set alert addresses
	MailServer *MailServer   // nil without set mailserver
	// Services in monit's config order, without those of broken files or
	// with broken dependencies.
	Services []*Service
	// Problems lists every error; a file with an error contributes no
	// service, and the other files are not affected.
	Problems []*Error
}

// HTTPD is monit's web interface (set httpd).
type HTTPD struct {
	Port      int
	Address   string   // "" means every address
	Cleartext []string // credential files (allow cleartext FILE)
	Users     []Credential
	Allow     []string // hosts and nets allowed
}

// Credential is one user:password pair.
type Credential struct{ User, Password string }

// MailServer is where alerts go.
type MailServer struct {
	Host    string
	Port    int
	Timeout time.Duration
}

// ServiceType is the kind of a check.
type ServiceType int

// The service types, numbered as monit's XML does.
const (
	TypeFilesystem ServiceType = 0
	TypeDirectory  ServiceType = 1
	TypeFile       ServiceType = 2
	TypeProcess    ServiceType = 3
	TypeHost       ServiceType = 4
	TypeSystem     ServiceType = 5
	TypeFifo       ServiceType = 6
)

// Word is the type as monit summary prints it.
func (t ServiceType) Word() string {
	return [...]string{"Filesystem", "Directory", "File", "Process", "Remote Host", "System", "Fifo"}[t]
}

// Service is one check block.
type Service struct {
	Name      string
	Type      ServiceType
	File      string
	Line      int
	PidFile   string // process
	Path      string // file, directory, filesystem, fifo
	Address   string // host
	Start     *Program
	Stop      *Program
	Groups    []string
	DependsOn []string
	Tests     []Test
	Mode      string // active (default), passive, manual
}

// InGroup reports whether s is in group g (case-insensitive, as monit).
func (s *Service) InGroup(g string) bool {
	for _, x := range s.Groups {
		if strings.EqualFold(x, g) {
			return true
		}
	}
	return false
}

// Program is a start, stop or exec program.
type Program struct {
	Argv    []string
	UID     string // "" means monit's own
	GID     string
	Timeout time.Duration
}

// String is the program as written.
func (p *Program) String() string { return strings.Join(p.Argv, " ") }

// TestKind tells the tests apart.
type TestKind int

// The tests.
const (
	TestConnection TestKind = iota // if failed [host] port | unixsocket
	TestResource                   // if totalmem|memory|cpu|... > N
	TestRestarts                   // if N restarts within M cycles
	TestOther                      // if changed ..., timestamp, ...: parsed only
)

// Test is one "if ... then ACTION" statement.
type Test struct {
	Kind TestKind
	Line int
	Text string // the condition, normalised, for status output

	// Connection tests.
	Host, Socket, Type, Protocol, Request string
	Port                                  int
	Timeout                               time.Duration
	// Resource tests: Resource > Limit (Percent: Limit is a percentage,
	// else kilobytes).
	Resource, Operator string
	Limit              float64
	Percent            bool
	// Failures within Cycles cycles (for N cycles: Failures == Cycles);
	// for restart rates, Failures restarts within Cycles cycles.
	Failures, Cycles int

	Action Action
}

// ActionKind is what a test does when it matches.
type ActionKind string

// The actions.
const (
	ActAlert     ActionKind = "alert"
	ActRestart   ActionKind = "restart"
	ActStart     ActionKind = "start"
	ActStop      ActionKind = "stop"
	ActUnmonitor ActionKind = "unmonitor"
	ActExec      ActionKind = "exec"
	ActTimeout   ActionKind = "timeout" // restart rates only: unmonitor
)

// Action is a test's action; Exec is set for ActExec.
type Action struct {
	Kind ActionKind
	Exec *Program
}

// Lookup finds a service by name, case-insensitively.
func (c *Config) Lookup(name string) (*Service, bool) {
	for _, s := range c.Services {
		if strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return nil, false
}

// Enforced reports whether vigil acts on the test: connection tests,
// memory tests (memory, totalmem) and restart rates. Others (cpu, loadavg,
// changed ...) are parsed only.
func (t Test) Enforced() bool {
	switch t.Kind {
	case TestConnection, TestRestarts:
		return true
	case TestResource:
		return t.Resource == "totalmem" || t.Resource == "memory"
	}
	return false
}
