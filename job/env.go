package job

import (
	"maps"
	"slices"

	"github.com/vigil-bosh/vigil/boshpath"
)

// Environ returns the process environment exactly as bpm builds it: Env plus
// the defaults TMPDIR, LANG, PATH and HOME, each added only when Env lacks
// that key, as KEY=VALUE strings sorted by key. The layout root stands where
// bpm has /var/vcap. Nothing is inherited from the caller's environment.
func (p Process) Environ(l boshpath.Layout) []string {
	env := p.envMap(l)
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

func (p Process) envMap(l boshpath.Layout) map[string]string {
	env := maps.Clone(p.Env)
	if env == nil {
		env = map[string]string{}
	}
	defaults := [...][2]string{
		{"TMPDIR", l.TmpDir(p.Job)},
		{"LANG", "en_US.UTF-8"},
		{"PATH", l.JobBinDir(p.Job) + ":/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:."},
		{"HOME", l.DataDir(p.Job)},
	}
	for _, kv := range defaults {
		if _, ok := env[kv[0]]; !ok {
			env[kv[0]] = kv[1]
		}
	}
	return env
}
