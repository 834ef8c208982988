package conformance_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/conformance"
)

// TestScripts runs every script through weir's topologytest and compares
// the output with Kafka Streams' output recorded in the script. (The
// conformance command, in CI, also runs Kafka Streams again.)
func TestScripts(t *testing.T) {
	paths, err := conformance.Paths("scripts")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 30 {
		t.Fatalf("%d scripts, want at least 30", len(paths))
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.ToSlash(p[len("scripts/"):]), ".json")
		t.Run(name, func(t *testing.T) {
			s, err := conformance.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			if s.Expect == nil {
				t.Fatal("no recorded output: run go run ./cmd/weir-conformance -record")
			}
			got, err := conformance.RunWeir(s)
			if err != nil {
				t.Fatal(err)
			}
			if d := conformance.Diff(s.WeirWant(s.Expect), got); d != "" {
				t.Errorf("%s\nweir differs from Kafka Streams 4.4:\n%s", s.About, d)
			}
		})
	}
}
