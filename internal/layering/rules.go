// Package layering holds the architecture's import rules as a table, which
// its test enforces over the import graph that `go list` reports, and
// checks against the package table of docs/ARCHITECTURE.md. It has no
// other use: change an import, change the table (and the document).
package layering

// module is the path the packages below are relative to.
const module = "github.com/vigil-bosh/vigil/"

// outside names the modules from elsewhere by the words the table uses:
// an import matches a word when it starts with the path given.
var outside = map[string]string{
	"x/sys/unix": "golang.org/x/sys/unix",
	"yaml":       "go.yaml.in/yaml/v3",
	"prometheus": "github.com/prometheus/",
}

// rules lists, for each package of the module (by its path in the
// module), the packages of the module and the words of outside that its
// non-test files may import. The standard library is always allowed.
var rules = map[string][]string{
	"atomicfile":           {},
	"backend":              {"boshpath", "control", "health", "job", "procstat", "restart", "supervise", "x/sys/unix"},
	"bench":                {"x/sys/unix"},
	"bench/child":          {"x/sys/unix"},
	"boshpath":             {},
	"bpmcli":               {"boshpath", "control", "job", "proc", "procinit", "supervise", "x/sys/unix"},
	"cmd/vigil":            {"boshpath", "bpmcli", "container", "control", "daemon", "demo", "job", "lifecycle", "logtail", "metrics", "monitcompat", "proc", "procinit", "systemd", "web", "x/sys/unix"},
	"container":            {"boshpath", "control", "daemon", "lifecycle", "supervise", "x/sys/unix"},
	"control":              {"x/sys/unix"},
	"daemon":               {"atomicfile", "backend", "boshpath", "control", "job", "monitext", "proc", "supervise"},
	"demo":                 {"boshpath", "control", "daemon", "examples", "metrics", "web"},
	"examples":             {},
	"examples/web":         {},
	"faults":               {},
	"health":               {},
	"internal/boshrelease": {"yaml"},
	"internal/boshrelease/cmd/create-release": {"internal/boshrelease"},
	"internal/layering":                       {},
	"internal/monitdiff":                      {"container", "x/sys/unix"},
	"internal/monitdiff/cmd/monitdiff-record": {"internal/monitdiff"},
	"internal/testproc":                       {"procinit", "x/sys/unix"},
	"internal/testroot":                       {"boshpath", "internal/testproc"},
	"job":                                     {"boshpath", "yaml"},
	"lifecycle":                               {"boshpath", "x/sys/unix"},
	"logtail":                                 {"x/sys/unix"},
	"metrics":                                 {"control", "prometheus", "x/sys/unix"},
	"metrics/metricstest":                     {"prometheus"},
	"monitcompat":                             {"atomicfile", "boshpath", "monitrc", "procstat", "supervise", "x/sys/unix"},
	"monitext":                                {"atomicfile", "backend", "boshpath", "control", "monitcompat", "monitrc", "restart", "supervise"},
	"monitrc":                                 {},
	"pidfile":                                 {"atomicfile"},
	"proc":                                    {"boshpath", "health", "job", "pidfile", "procinit", "restart", "sandbox", "sandbox/cgroup", "supervise", "x/sys/unix"},
	"procinit":                                {"atomicfile", "pidfile", "sandbox", "sandbox/cgroup", "x/sys/unix"},
	"procstat":                                {"x/sys/unix"},
	"release":                                 {},
	"restart":                                 {},
	"sandbox":                                 {"boshpath", "job", "sandbox/seccomp", "x/sys/unix"},
	"sandbox/cgroup":                          {},
	"sandbox/seccomp":                         {"x/sys/unix"},
	"supervise":                               {"restart", "x/sys/unix"},
	"systemd":                                 {"atomicfile", "backend", "boshpath", "control", "job", "monitcompat", "monitrc", "pidfile", "proc", "restart", "supervise", "x/sys/unix"},
	"web":                                     {"atomicfile", "boshpath", "control", "logtail"},
}

// never lists imports that no file of a package may have, its tests
// included: the engine is tested with fakes, and the two back ends are
// peers over backend.
var never = map[string][]string{
	"supervise": {"proc", "job", "control"},
	"systemd":   {"daemon"},
	"backend":   {"daemon", "systemd"},
}
