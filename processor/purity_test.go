package processor_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The processing core must stay pure (DESIGN §1): no Kafka client, no
// storage engine, no network, no wall clock. This test lists the packages
// each core package depends on, directly or not, like pebble's
// TestForbiddenImports, and scans the sources for clock reads.

var corePackages = []string{"processor", "topology", "serde", "statestore", "topologytest"}

var forbiddenImports = []string{
	"github.com/IBM/sarama",
	"github.com/dgraph-io/badger",
	"github.com/twmb/franz-go",
	"net",
	"os/exec",
}

var forbiddenCalls = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true,
	"After": true, "AfterFunc": true, "Tick": true, "NewTicker": true, "NewTimer": true,
}

func TestForbiddenImports(t *testing.T) {
	for _, pkg := range corePackages {
		path := "github.com/weirstream/weir/" + pkg
		out, err := exec.Command("go", "list", "-deps", path).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			for _, bad := range forbiddenImports {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("%s depends on %s", path, dep)
				}
			}
		}
	}
}

func TestNoWallClock(t *testing.T) {
	for _, pkg := range corePackages {
		files, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, pkg)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
			require.NoError(t, err)
			timeName := ""
			for _, imp := range f.Imports {
				if imp.Path.Value == `"time"` {
					timeName = "time"
					if imp.Name != nil {
						timeName = imp.Name.Name
					}
				}
			}
			if timeName == "" {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && forbiddenCalls[sel.Sel.Name] {
					t.Errorf("%s uses time.%s: the core takes time from records or an injected clock", file, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
