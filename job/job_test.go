package job

import (
	"reflect"
	"syscall"
	"testing"
)

func TestEqual(t *testing.T) {
	mem := uint64(1)
	base := Process{
		Job: "j", Name: "n", Executable: "/x", ResolvedExecutable: "/x", Args: []string{"a"},
		Env: map[string]string{"A": "1"}, Workdir: "/w", Hooks: Hooks{PreStart: "/p"},
		Capabilities: []string{"KILL"}, Limits: Limits{Memory: &mem},
		AdditionalVolumes: []Volume{{Path: "/v"}}, Unsafe: Unsafe{UnrestrictedVolumes: []Volume{{Path: "/u"}}},
		ShutdownSignal: syscall.SIGTERM, Source: Source{"f", 1},
		DependsOn: []Dependency{{Job: "db", Process: "pg"}},
	}
	base.Restart.Limit.Exec = []string{"/bin/true"}
	same := base
	mem2 := uint64(1)
	same.Limits.Memory = &mem2 // same value, other pointer
	same.Source = Source{"g", 9}
	if !base.Equal(same) {
		t.Error("processes differing only in Source and pointer identity are not Equal")
	}
	if !(Process{}).Equal(Process{Args: []string{}, Env: map[string]string{}}) {
		t.Error("nil and empty are not Equal")
	}
	// Changing any exported field but Source must make them differ.
	v := reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Name == "Source" {
			continue
		}
		for _, changed := range mutations(v.Field(i)) {
			q := base
			reflect.ValueOf(&q).Elem().Field(i).Set(changed)
			if base.Equal(q) {
				t.Errorf("changing %s to %+v leaves the process Equal", f.Name, changed)
			}
		}
	}
}

// mutations returns values that differ from v, one per nested field, so the
// test notices a field that Equal forgets.
func mutations(v reflect.Value) []reflect.Value {
	switch v.Kind() {
	case reflect.String:
		return []reflect.Value{reflect.ValueOf(v.String() + "x").Convert(v.Type())}
	case reflect.Bool:
		return []reflect.Value{reflect.ValueOf(!v.Bool())}
	case reflect.Int, reflect.Int64, reflect.Uint64:
		n := reflect.New(v.Type()).Elem()
		if v.CanInt() {
			n.SetInt(v.Int() + 1)
		} else {
			n.SetUint(v.Uint() + 1)
		}
		return []reflect.Value{n}
	case reflect.Pointer:
		n := reflect.New(v.Type().Elem())
		out := []reflect.Value{n}
		if !v.IsNil() {
			for _, m := range mutations(v.Elem()) {
				p := reflect.New(v.Type().Elem())
				p.Elem().Set(m)
				out = append(out, p)
			}
			out = append(out, reflect.Zero(v.Type()))
		}
		return out
	case reflect.Slice:
		return []reflect.Value{reflect.Append(v, reflect.Zero(v.Type().Elem())), reflect.Zero(v.Type())}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("other"), reflect.ValueOf("x"))
		return []reflect.Value{m}
	case reflect.Struct:
		var out []reflect.Value
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			for _, m := range mutations(v.Field(i)) {
				c := reflect.New(v.Type()).Elem()
				c.Set(v)
				c.Field(i).Set(m)
				out = append(out, c)
			}
		}
		return out
	}
	panic("mutations: unhandled kind " + v.Kind().String())
}
