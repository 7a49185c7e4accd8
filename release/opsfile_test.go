package release_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestOpsFiles: applied to cf-deployment as the bosh CLI applies ops-files,
// use-vigil.yml makes the bpm add-on's bpm job vigil's and adds the vigil
// job beside it, use-vigil-as-bpm.yml only the former; both swap the bpm
// release for vigil and touch nothing else; applying one twice changes
// nothing more.
func TestOpsFiles(t *testing.T) {
	for file, wantJobs := range map[string]string{
		"operations/use-vigil.yml":        "bpm/vigil vigil/vigil",
		"operations/use-vigil-as-bpm.yml": "bpm/vigil",
	} {
		t.Run(file, func(t *testing.T) {
			doc := load(t, "testdata/cf-deployment.yml")
			for range 2 {
				doc = applyOps(t, doc, load(t, file).([]any))
			}
			var got []string
			for _, j := range find(t, doc, "addons", "bpm")["jobs"].([]any) {
				j := j.(map[string]any)
				got = append(got, fmt.Sprintf("%s/%s", j["name"], j["release"]))
			}
			if strings.Join(got, " ") != wantJobs {
				t.Errorf("the bpm add-on's jobs: %v, want %s", got, wantJobs)
			}
			var releases []string
			for _, r := range doc.(map[string]any)["releases"].([]any) {
				releases = append(releases, r.(map[string]any)["name"].(string))
			}
			if strings.Join(releases, " ") != "diego vigil" {
				t.Errorf("releases %v", releases)
			}
			if len(find(t, doc, "addons", "loggregator_agent")["jobs"].([]any)) != 1 || len(doc.(map[string]any)["instance_groups"].([]any)) != 1 {
				t.Error("other parts of the manifest changed")
			}
		})
	}
}

func load(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func find(t *testing.T, doc any, list, name string) map[string]any {
	t.Helper()
	for _, e := range doc.(map[string]any)[list].([]any) {
		if m := e.(map[string]any); m["name"] == name {
			return m
		}
	}
	t.Fatalf("no %s named %s", list, name)
	return nil
}

// applyOps applies ops-file operations with go-patch's semantics for what
// the release's ops-files use: replace and remove; path tokens KEY,
// KEY=VALUE (the list element whose KEY is VALUE), a trailing "?" (absent
// is fine: replace appends, remove does nothing) and "-" (append).
func applyOps(t *testing.T, doc any, ops []any) any {
	t.Helper()
	for _, o := range ops {
		op := o.(map[string]any)
		tokens := strings.Split(strings.TrimPrefix(op["path"].(string), "/"), "/")
		var err error
		doc, err = patch(doc, tokens, op["type"].(string), op["value"])
		if err != nil {
			t.Fatalf("%s %s: %v", op["type"], op["path"], err)
		}
	}
	return doc
}

func patch(node any, tokens []string, kind string, value any) (any, error) {
	tok, last := tokens[0], len(tokens) == 1
	optional := strings.HasSuffix(tok, "?")
	tok = strings.TrimSuffix(tok, "?")
	if key, want, ok := strings.Cut(tok, "="); ok {
		list, _ := node.([]any)
		for i, e := range list {
			if m, ok := e.(map[string]any); ok && fmt.Sprint(m[key]) == want {
				switch {
				case last && kind == "remove":
					return append(list[:i:i], list[i+1:]...), nil
				case last:
					list[i] = value
					return list, nil
				}
				next, err := patch(e, tokens[1:], kind, value)
				list[i] = next
				return list, err
			}
		}
		switch {
		case optional && last && kind == "replace":
			return append(list, value), nil
		case optional && kind == "remove":
			return list, nil
		}
		return nil, fmt.Errorf("no element with %s=%s", key, want)
	}
	if tok == "-" && last && kind == "replace" {
		list, _ := node.([]any)
		return append(list, value), nil
	}
	m, ok := node.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: not a map", tok)
	}
	if last {
		if kind == "remove" {
			delete(m, tok)
		} else {
			m[tok] = value
		}
		return m, nil
	}
	child, ok := m[tok]
	if !ok {
		return nil, fmt.Errorf("no key %s", tok)
	}
	next, err := patch(child, tokens[1:], kind, value)
	m[tok] = next
	return m, err
}
