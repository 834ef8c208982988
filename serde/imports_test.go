package serde

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// forbiddenImport reports whether package serde may not depend on path: it
// stays pure (DESIGN.md §1), with no Kafka client, no storage and no network.
func forbiddenImport(path string) bool {
	for _, p := range []string{"github.com/IBM/sarama", "github.com/dgraph-io/badger", "net"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// TestForbiddenImports checks the package's own files for forbidden imports
// and for calls of time.Now, which a pure package must not make.
func TestForbiddenImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		timeName := ""
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			require.False(t, forbiddenImport(path), "%s imports %s", name, path)
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
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Now" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == timeName {
					t.Errorf("%s: calls time.Now", fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
}

// TestForbiddenDeps checks the package's transitive dependencies (goavro's
// included) with go list.
func TestForbiddenDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		require.False(t, forbiddenImport(dep), "serde depends on %s", dep)
	}
}
