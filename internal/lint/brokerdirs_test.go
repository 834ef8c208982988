package lint

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The test brokers that scripts/kafka starts keep their data inside the
// repository (gitignored), where `go list ./...` — and so go test and go
// vet of ./... — walks unless a directory's name begins with "_" or ".".
// A broker deletes topic directories while the tests run; a walk that met
// one mid-deletion failed the pattern ("open …/run/data/<topic>-delete: no
// such file or directory", TestImports in a CI rehearsal). So every log dir
// a script configures must be one the walk skips.
func TestBrokerLogDirsAreNotWalked(t *testing.T) {
	scripts, err := filepath.Glob("../../scripts/kafka/*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts in scripts/kafka: %v", err)
	}
	logDirs := regexp.MustCompile(`(?m)^log\.dirs=(.*)$`)
	seen := 0
	for _, path := range scripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range logDirs.FindAllStringSubmatch(string(b), -1) {
			seen++
			base := filepath.Base(strings.TrimSpace(m[1]))
			if !strings.HasPrefix(base, "_") && !strings.HasPrefix(base, ".") {
				t.Errorf("%s: log.dirs=%s: the last element must begin with _ or . so that go list ./... does not walk it",
					filepath.Base(path), m[1])
			}
		}
	}
	if seen == 0 {
		t.Fatal("no log.dirs line found in scripts/kafka/*.sh")
	}
}
