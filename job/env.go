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

// EnvironInside is Environ as the process sees it in its sandbox: the
// defaults name the job's directories below /var/vcap, where the sandbox
// mounts them whatever the root (as bpm does).
func (p Process) EnvironInside() []string {
	inside, _ := boshpath.New(boshpath.DefaultRoot) // an absolute constant: never fails
	return p.Environ(inside)
}

// WorkdirInside is Workdir as the process sees it in its sandbox: bpm's
// default, the job's directory, below /var/vcap; a workdir the
// configuration names stays as written.
func (p Process) WorkdirInside(l boshpath.Layout) string {
	if p.Workdir == l.JobDir(p.Job) {
		return l.Inside(p.Workdir)
	}
	return p.Workdir
}
