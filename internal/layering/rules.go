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
	"internal/atomicfile":     {},
	"internal/backend":        {"boshpath", "control", "internal/health", "job", "internal/procstat", "internal/suggest", "internal/supervise/restart", "internal/supervise", "x/sys/unix"},
	"bench":                   {"x/sys/unix"},
	"bench/child":             {"x/sys/unix"},
	"boshpath":                {},
	"internal/bpmcli":         {"boshpath", "control", "internal/regfile", "job", "internal/launch", "internal/launch/procinit", "internal/supervise", "x/sys/unix"},
	"cmd/vigil":               {"internal/atomicfile", "internal/backend", "boshpath", "internal/bpmcli", "internal/container", "control", "internal/backend/daemon", "internal/demo", "internal/history", "internal/stemcell", "job", "internal/lifecycle", "internal/logtail", "internal/metrics", "internal/monit", "internal/monit/monitrc", "internal/launch", "internal/launch/procinit", "internal/backend/systemd", "internal/suggest", "internal/web", "x/sys/unix", "internal/initimage", "internal/ociimage"},
	"internal/container":      {"boshpath", "control", "internal/backend/daemon", "internal/connlimit", "internal/launch", "internal/regfile", "internal/lifecycle", "internal/supervise", "x/sys/unix"},
	"control":                 {"internal/connlimit", "internal/jsonwire", "x/sys/unix"},
	"internal/backend/daemon": {"internal/atomicfile", "internal/backend", "boshpath", "control", "job", "internal/monit/monitext", "internal/launch", "internal/supervise", "internal/initimage"},
	"internal/demo":           {"boshpath", "control", "internal/backend/daemon", "examples", "internal/history", "internal/metrics", "internal/web"},
	"examples":                {},
	"examples/web":            {},
	"internal/faults":         {},
	"internal/health":         {},
	"internal/history":        {"internal/backend", "control"},
	"internal/boshrelease":    {"yaml"},
	"internal/boshrelease/cmd/create-release": {"internal/boshrelease"},
	"internal/connlimit":                      {"x/sys/unix"},
	"internal/connlimit/connlimittest":        {"internal/connlimit"},
	"internal/jsonwire":                       {},
	"internal/jsonwire/jsonwiretest":          {},
	"internal/layering":                       {},
	"internal/monitdiff":                      {"internal/container", "x/sys/unix"},
	"internal/monitdiff/cmd/monitdiff-record": {"internal/monitdiff"},
	"internal/ociimage":                       {},
	"internal/promtext":                       {},
	"internal/regfile":                        {"x/sys/unix"},
	"internal/stemcell":                       {},
	"internal/testproc":                       {"internal/launch/procinit", "x/sys/unix"},
	"internal/testroot":                       {"boshpath", "internal/testproc"},
	"internal/vmrig":                          {"x/sys/unix"},
	"internal/kuberig":                        {"internal/ociimage", "x/sys/unix"},
	"internal/kuberig/standin":                {},
	"internal/vmrig/guest":                    {},
	"job":                                     {"boshpath", "internal/capability", "internal/suggest", "yaml"},
	"internal/capability":                     {},
	"internal/suggest":                        {},
	"internal/lifecycle":                      {"boshpath", "internal/regfile", "x/sys/unix"},
	"internal/logtail":                        {"internal/regfile", "x/sys/unix"},
	"internal/metrics":                        {"control", "internal/promtext", "internal/procstat", "x/sys/unix"},
	"internal/metrics/metricstest":            {"prometheus"},
	"internal/monit":                          {"internal/atomicfile", "boshpath", "internal/connlimit", "internal/monit/monitrc", "internal/pidfile", "internal/procstat", "internal/supervise", "x/sys/unix"},
	"internal/monit/monitext":                 {"internal/atomicfile", "internal/backend", "boshpath", "control", "internal/monit", "internal/monit/monitrc", "internal/supervise/restart", "internal/supervise"},
	"internal/monit/monitrc":                  {"internal/suggest"},
	"internal/pidfile":                        {"internal/atomicfile", "internal/regfile"},
	"internal/launch":                         {"internal/atomicfile", "boshpath", "internal/health", "internal/regfile", "job", "internal/pidfile", "internal/launch/procinit", "internal/procstat", "internal/supervise/restart", "internal/sandbox", "internal/sandbox/cgroup", "internal/sandbox/scope", "internal/sandbox/setup", "internal/supervise", "x/sys/unix", "internal/initimage"},
	"internal/launch/procinit":                {"internal/atomicfile", "internal/jsonwire", "internal/regfile", "internal/pidfile", "internal/sandbox", "internal/sandbox/cgroup", "x/sys/unix"},
	"internal/initimage":                      {"x/sys/unix"},
	"internal/initimage/cmd/vigil-init":       {"internal/launch/procinit"},
	"internal/initimage/gen":                  {},
	"internal/procstat":                       {"x/sys/unix"},
	"release":                                 {},
	"internal/supervise/restart":              {},
	"internal/sandbox":                        {"internal/capability", "internal/jsonwire", "internal/regfile", "internal/sandbox/seccomp", "x/sys/unix"},
	"internal/sandbox/cgroup":                 {"x/sys/unix"},
	"internal/sandbox/scope":                  {"godbus", "internal/sandbox/cgroup", "x/sys/unix"},
	"internal/sandbox/seccomp":                {"x/sys/unix"},
	"internal/sandbox/setup":                  {"boshpath", "job", "internal/sandbox", "x/sys/unix"},
	"internal/supervise":                      {"internal/supervise/restart", "x/sys/unix"},
	"internal/backend/systemd":                {"internal/atomicfile", "internal/backend", "boshpath", "control", "godbus", "job", "internal/logtail", "internal/monit", "internal/monit/monitrc", "internal/pidfile", "internal/launch", "internal/supervise/restart", "internal/supervise", "x/sys/unix", "internal/initimage"},
	"internal/web":                            {"internal/atomicfile", "boshpath", "control", "internal/history", "internal/connlimit", "internal/logtail"},
}

// never lists imports that no file of a package may have, its tests
// included: the engine is tested with fakes, and the two back ends are
// peers over backend.
var never = map[string][]string{
	"internal/supervise":       {"internal/launch", "job", "control"},
	"internal/backend/systemd": {"internal/backend/daemon"},
	"internal/backend":         {"internal/backend/daemon", "internal/backend/systemd"},
}
