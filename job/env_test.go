package job

import (
	"slices"
	"testing"
)

func TestEnviron(t *testing.T) {
	tests := []struct {
		name string
		root string
		env  map[string]string
		want []string
	}{
		{"defaults", "/var/vcap", nil, []string{
			"HOME=/var/vcap/data/web",
			"LANG=en_US.UTF-8",
			"PATH=/var/vcap/jobs/web/bin:/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.",
			"TMPDIR=/var/vcap/data/web/tmp",
		}},
		{"other root", "/srv/bosh", map[string]string{}, []string{
			"HOME=/srv/bosh/data/web",
			"LANG=en_US.UTF-8",
			"PATH=/srv/bosh/jobs/web/bin:/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin:.",
			"TMPDIR=/srv/bosh/data/web/tmp",
		}},
		{"overrides", "/var/vcap", map[string]string{"PATH": "/bin", "LANG": "C", "HOME": "", "TMPDIR": "/tmp", "A": "1", "Z": "a=b"}, []string{
			"A=1", "HOME=", "LANG=C", "PATH=/bin", "TMPDIR=/tmp", "Z=a=b",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Process{Job: "web", Name: "web", Env: tt.env}
			if got := p.Environ(layout(t, tt.root)); !slices.Equal(got, tt.want) {
				t.Errorf("Environ =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestEnvironDoesNotModifyEnv(t *testing.T) {
	env := map[string]string{"A": "1"}
	Process{Job: "web", Env: env}.Environ(vcap)
	if len(env) != 1 {
		t.Errorf("Environ added to Env: %v", env)
	}
}
