// Package monitrc reads monit control files: the stemcell's monitrc (daemon
// cycle, httpd, includes, alerts) and the job files releases ship, in the
// subset of monit 5.2.5's grammar that releases use. It is pure apart from
// Load, which reads files. Errors name file and line.
package monitrc

import (
	"fmt"
	"slices"
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
	// DependLines holds the line of each name in DependsOn.
	DependLines []int
	Tests       []Test
	Mode        string // active (default), passive, manual
	Every       int    // check at every N-th cycle only; 0 or 1: every cycle
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

// The tests of monit 5.2.5's grammar. Which a check may have depends on
// its type (AllowedTests).
const (
	TestConnection TestKind = iota // if failed [host H] port P | unixsocket S ...
	TestResource                   // if cpu|memory|totalmem|children|loadavg|swap ... > N
	TestRestarts                   // if N restarts within M cycles
	TestExist                      // if not exist: the action instead of restart
	TestPermission                 // if failed permission NNNN
	TestUID                        // if failed uid U
	TestGID                        // if failed gid G
	TestTimestamp                  // if timestamp > N UNIT | if changed timestamp
	TestSize                       // if size > N UNIT | if changed size
	TestChecksum                   // if failed [md5|sha1] checksum [expect H] | if changed checksum
	TestMatch                      // if [not] match REGEX|FILE (content), ignore [not] match
	TestPID                        // if changed pid
	TestPPID                       // if changed ppid
	TestICMP                       // if failed icmp type echo
	TestSpace                      // if space > N UNIT|%
	TestInode                      // if inode(s) > N [%]
	TestFsflag                     // if changed fsflags
)

// Test is one "if ... then ACTION" statement.
type Test struct {
	Kind TestKind
	Line int
	Text string // the condition as monit's messages print it

	// Connection tests. Host is the address of a check host when the test
	// names none, else localhost, as monit defaults it.
	Host, Socket, Type, Protocol, Request string
	Port                                  int
	Generic                               []Exchange // a generic protocol's send and expect strings, in order
	Timeout                               time.Duration
	Count                                 int // ICMP: echo requests sent (3 by default)

	// Resource, timestamp, size, space and inode tests: Resource Operator
	// Limit. Units: memory, swap and space in kilobytes (or percent when
	// Percent), cpu in percent, load as written, timestamps in seconds,
	// sizes in bytes.
	Resource, Operator string
	Limit              float64
	Percent            bool
	// Changed: a change test (if changed timestamp|size|checksum|pid|ppid|fsflags).
	Changed bool
	// Permission tests: the mode; uid and gid tests: the name or number.
	Perm  uint32
	Owner string
	// Checksum tests: md5, sha1 or "" (md5); Expect the hash, "" for the
	// file's hash at the start.
	Hash, Sum string
	// Match tests: the regular expression, or a file of them; Not inverts.
	Pattern     string
	PatternFile bool
	Not, Ignore bool

	// Failures within Cycles cycles (for N cycles: Failures == Cycles; zero:
	// once); for restart rates, Failures restarts within Cycles cycles.
	Failures, Cycles int

	Action Action
	// Recovery is the action once the test passes again (else if
	// succeeded ...; alert without one), within its own rate.
	Recovery                         Action
	RecoveryFailures, RecoveryCycles int
}

// Exchange is one step of a generic protocol: a string to send, or a
// regular expression the next line read must match.
type Exchange struct {
	Send bool
	Text string
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

// AllowedTests is which tests a check of type t may have, as monit
// 5.2.5's grammar allows them.
func AllowedTests(t ServiceType) []TestKind {
	common := []TestKind{TestRestarts, TestExist}
	switch t {
	case TypeProcess:
		return append(common, TestConnection, TestResource, TestPID, TestPPID)
	case TypeFile:
		return append(common, TestTimestamp, TestPermission, TestUID, TestGID, TestChecksum, TestSize, TestMatch)
	case TypeDirectory, TypeFifo:
		return append(common, TestTimestamp, TestPermission, TestUID, TestGID)
	case TypeFilesystem:
		return append(common, TestPermission, TestUID, TestGID, TestSpace, TestInode, TestFsflag)
	case TypeHost:
		return append(common, TestConnection, TestICMP)
	case TypeSystem:
		return []TestKind{TestRestarts, TestResource}
	}
	return nil
}

// WithSystem returns the configuration with monit's own system service,
// system_HOST, after the others when no check system is declared, as
// monit 5.2.5 adds it. It is c itself when c declares one (or already has
// system_HOST).
func (c *Config) WithSystem(host string) *Config {
	name := "system_" + host
	for _, s := range c.Services {
		if s.Type == TypeSystem || strings.EqualFold(s.Name, name) {
			return c
		}
	}
	out := *c
	out.Services = append(slices.Clip(c.Services), &Service{Name: name, Type: TypeSystem, File: c.File, Mode: "active"})
	return &out
}
