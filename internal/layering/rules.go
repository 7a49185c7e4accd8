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
	"godbus":     "github.com/godbus/dbus/v5",
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
	"bpmcli":               {"boshpath", "control", "internal/regfile", "job", "proc", "procinit", "supervise", "x/sys/unix"},
	"cmd/vigil":            {"atomicfile", "backend", "boshpath", "bpmcli", "container", "control", "daemon", "demo", "history", "internal/stemcell", "job", "lifecycle", "logtail", "metrics", "monitcompat", "monitrc", "proc", "procinit", "systemd", "web", "x/sys/unix"},
	"container":            {"boshpath", "control", "daemon", "internal/connlimit", "internal/regfile", "lifecycle", "supervise", "x/sys/unix"},
	"control":              {"internal/connlimit", "x/sys/unix"},
	"daemon":               {"atomicfile", "backend", "boshpath", "control", "job", "monitext", "proc", "supervise"},
	"demo":                 {"boshpath", "control", "daemon", "examples", "history", "metrics", "web"},
	"examples":             {},
	"examples/web":         {},
	"faults":               {},
	"health":               {},
	"history":              {"backend", "control"},
	"internal/boshrelease": {"yaml"},
	"internal/boshrelease/cmd/create-release": {"internal/boshrelease"},
	"internal/connlimit":                      {},
	"internal/jsonwire":                       {},
	"internal/jsonwire/jsonwiretest":          {},
	"internal/layering":                       {},
	"internal/monitdiff":                      {"container", "x/sys/unix"},
	"internal/monitdiff/cmd/monitdiff-record": {"internal/monitdiff"},
	"internal/promtext":                       {},
	"internal/regfile":                        {"x/sys/unix"},
	"internal/stemcell":                       {},
	"internal/testproc":                       {"procinit", "x/sys/unix"},
	"internal/testroot":                       {"boshpath", "internal/testproc"},
	"internal/vmrig":                          {"x/sys/unix"},
	"internal/vmrig/guest":                    {},
	"job":                                     {"boshpath", "yaml"},
	"lifecycle":                               {"boshpath", "internal/regfile", "x/sys/unix"},
	"logtail":                                 {"internal/regfile", "x/sys/unix"},
	"metrics":                                 {"control", "internal/promtext", "procstat", "x/sys/unix"},
	"metrics/metricstest":                     {"prometheus"},
	"monitcompat":                             {"atomicfile", "boshpath", "internal/connlimit", "monitrc", "pidfile", "procstat", "supervise", "x/sys/unix"},
	"monitext":                                {"atomicfile", "backend", "boshpath", "control", "monitcompat", "monitrc", "restart", "supervise"},
	"monitrc":                                 {},
	"pidfile":                                 {"atomicfile", "internal/regfile"},
	"proc":                                    {"atomicfile", "boshpath", "health", "internal/regfile", "job", "pidfile", "procinit", "procstat", "restart", "sandbox", "sandbox/cgroup", "sandbox/setup", "supervise", "x/sys/unix"},
	"procinit":                                {"atomicfile", "internal/jsonwire", "internal/regfile", "pidfile", "sandbox", "sandbox/cgroup", "x/sys/unix"},
	"procstat":                                {"x/sys/unix"},
	"release":                                 {},
	"restart":                                 {},
	"sandbox":                                 {"internal/jsonwire", "internal/regfile", "sandbox/seccomp", "x/sys/unix"},
	"sandbox/cgroup":                          {"x/sys/unix"},
	"sandbox/seccomp":                         {"x/sys/unix"},
	"sandbox/setup":                           {"boshpath", "job", "sandbox", "x/sys/unix"},
	"supervise":                               {"restart", "x/sys/unix"},
	"systemd":                                 {"atomicfile", "backend", "boshpath", "control", "godbus", "job", "logtail", "monitcompat", "monitrc", "pidfile", "proc", "restart", "supervise", "x/sys/unix"},
	"web":                                     {"atomicfile", "boshpath", "control", "history", "internal/connlimit", "logtail"},
}

// never lists imports that no file of a package may have, its tests
// included: the engine is tested with fakes, and the two back ends are
// peers over backend.
var never = map[string][]string{
	"supervise": {"proc", "job", "control"},
	"systemd":   {"daemon"},
	"backend":   {"daemon", "systemd"},
}
