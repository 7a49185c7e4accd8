package control

import (
	"context"
	"os"
	"regexp"
	"slices"
	"testing"
)

// TestAPIDocListsEveryRoute: docs/API.md has a section for every route the
// server serves, and none for a route it does not.
func TestAPIDocListsEveryRoute(t *testing.T) {
	doc, err := os.ReadFile("../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^### `([A-Z]+ /[^`]*)`$").FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1])
	}
	var served []string
	for _, r := range routes(&fakeManager{}, serveOptions{}, context.Background()) {
		served = append(served, r.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("docs/API.md documents %q; the server serves %q", documented, served)
	}
}
