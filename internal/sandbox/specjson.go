package sandbox

import (
	"fmt"

	"github.com/vigil-bosh/vigil/internal/jsonwire"
)

// The spec's JSON without reflection (see internal/jsonwire): the init
// sends it to the helper, and reads it in its launch, once each.

// AppendJSON appends s as encoding/json encodes it.
func (s *Spec) AppendJSON(b []byte) []byte {
	o := jsonwire.Begin(b)
	o.String("root", s.Root)
	if s.RootSuid {
		o.Bool("root_suid", true)
	}
	o.Key("mounts")
	if s.Mounts == nil {
		o.B = append(o.B, "null"...)
	} else {
		o.B = append(o.B, '[')
		for i := range s.Mounts {
			if i > 0 {
				o.B = append(o.B, ',')
			}
			o.B = s.Mounts[i].appendJSON(o.B)
		}
		o.B = append(o.B, ']')
	}
	o.Strings("masked", s.Masked)
	o.Strings("read_only", s.ReadOnly)
	o.Int("uid", int64(s.UID))
	o.Int("gid", int64(s.GID))
	o.Ints("caps", s.Caps)
	o.Bool("no_new_privs", s.NoNewPrivs)
	o.Bool("seccomp", s.Seccomp)
	o.Key("rlimits")
	if s.Rlimits == nil {
		o.B = append(o.B, "null"...)
	} else {
		o.B = append(o.B, '[')
		for i, l := range s.Rlimits {
			if i > 0 {
				o.B = append(o.B, ',')
			}
			r := jsonwire.Begin(o.B)
			r.Int("resource", int64(l.Resource))
			r.Uint("cur", l.Cur)
			r.Uint("max", l.Max)
			o.B = r.End()
		}
		o.B = append(o.B, ']')
	}
	o.Strings("cgroups", s.Cgroups)
	o.String("path", s.Path)
	o.Strings("args", s.Args)
	o.Strings("env", s.Env)
	o.String("dir", s.Dir)
	if s.Host {
		o.Bool("host", true)
	}
	return o.End()
}

// appendJSON appends m as encoding/json encodes it (omitting what its tags
// say to omit when empty).
func (m *Mount) appendJSON(b []byte) []byte {
	o := jsonwire.Begin(b)
	o.String("kind", m.Kind)
	if m.Source != "" {
		o.String("source", m.Source)
	}
	o.String("dest", m.Dest)
	for _, f := range []struct {
		key string
		on  bool
	}{{"ro", m.ReadOnly}, {"noexec", m.NoExec}, {"nosuid", m.NoSuid}, {"nodev", m.NoDev}} {
		if f.on {
			o.Bool(f.key, true)
		}
	}
	if m.Data != "" {
		o.String("data", m.Data)
	}
	if m.Shared {
		o.Bool("shared", true)
	}
	return o.End()
}

// ReadSpec reads a spec (nil for null) from r.
func ReadSpec(r *jsonwire.Reader) *Spec {
	if r.Null() {
		return nil
	}
	s := &Spec{}
	r.Object(func(key string) {
		switch key {
		case "root":
			s.Root = r.String()
		case "root_suid":
			s.RootSuid = r.Bool()
		case "mounts":
			s.Mounts = readMounts(r)
		case "masked":
			s.Masked = r.Strings()
		case "read_only":
			s.ReadOnly = r.Strings()
		case "uid":
			s.UID = int(r.Int())
		case "gid":
			s.GID = int(r.Int())
		case "caps":
			s.Caps = r.Ints()
		case "no_new_privs":
			s.NoNewPrivs = r.Bool()
		case "seccomp":
			s.Seccomp = r.Bool()
		case "rlimits":
			s.Rlimits = readRlimits(r)
		case "cgroups":
			s.Cgroups = r.Strings()
		case "path":
			s.Path = r.String()
		case "args":
			s.Args = r.Strings()
		case "env":
			s.Env = r.Strings()
		case "dir":
			s.Dir = r.String()
		case "host":
			s.Host = r.Bool()
		default:
			r.Skip()
		}
	})
	return s
}

func readMounts(r *jsonwire.Reader) []Mount {
	var out []Mount
	if r.Array(func() { out = append(out, readMount(r)) }) && out == nil {
		out = []Mount{}
	}
	return out
}

func readMount(r *jsonwire.Reader) Mount {
	var m Mount
	r.Object(func(key string) {
		switch key {
		case "kind":
			m.Kind = r.String()
		case "source":
			m.Source = r.String()
		case "dest":
			m.Dest = r.String()
		case "ro":
			m.ReadOnly = r.Bool()
		case "noexec":
			m.NoExec = r.Bool()
		case "nosuid":
			m.NoSuid = r.Bool()
		case "nodev":
			m.NoDev = r.Bool()
		case "data":
			m.Data = r.String()
		case "shared":
			m.Shared = r.Bool()
		default:
			r.Skip()
		}
	})
	return m
}

func readRlimits(r *jsonwire.Reader) []Rlimit {
	var out []Rlimit
	ok := r.Array(func() {
		var l Rlimit
		r.Object(func(key string) {
			switch key {
			case "resource":
				l.Resource = int(r.Int())
			case "cur":
				l.Cur = r.Uint()
			case "max":
				l.Max = r.Uint()
			default:
				r.Skip()
			}
		})
		out = append(out, l)
	})
	if ok && out == nil {
		out = []Rlimit{}
	}
	return out
}

// DecodeSpec decodes a spec that AppendJSON (or encoding/json) wrote; data
// must be a JSON object.
func DecodeSpec(data []byte) (Spec, error) {
	r := jsonwire.NewReader(data)
	s := ReadSpec(r)
	if err := r.End(); err != nil {
		return Spec{}, fmt.Errorf("sandbox spec: %w", err)
	}
	if s == nil {
		return Spec{}, fmt.Errorf("sandbox spec: null")
	}
	return *s, nil
}
