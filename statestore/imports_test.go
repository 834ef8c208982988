package statestore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForbiddenImports keeps this package pure: no Kafka client, no Badger,
// no network, no serde (typed views take Codec), and no wall clock.
func TestForbiddenImports(t *testing.T) {
	forbidden := []string{
		"github.com/IBM/sarama",
		"github.com/dgraph-io/badger",
		"github.com/twmb/franz-go",
		"github.com/weirstream/weir/serde",
		"net",
	}
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Tick": true, "After": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true, "Sleep": true}

	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		require.NoError(t, err)
		checked++

		timeName := ""
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			for _, bad := range forbidden {
				require.False(t, path == bad || strings.HasPrefix(path, bad+"/"), "%s imports %s", name, path)
			}
			if path == "time" {
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
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && clock[sel.Sel.Name] {
				t.Errorf("%s: time.%s reads the wall clock", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	require.NotZero(t, checked)
}
