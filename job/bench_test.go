package job

import (
	"os"
	"testing"

	"github.com/vigil-bosh/vigil/boshpath"
)

// BenchmarkParse measures parsing and validating a gorouter-shaped bpm.yml.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/gorouter.yml")
	if err != nil {
		b.Fatal(err)
	}
	l, _ := boshpath.New("/var/vcap")
	for b.Loop() {
		if _, _, err := Parse(l, "gorouter", "bpm.yml", data); err != nil {
			b.Fatal(err)
		}
	}
}
