package offsets

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForbiddenImports keeps the Kafka clients out: this package stores
// offsets, it does not talk to Kafka.
func TestForbiddenImports(t *testing.T) {
	forbidden := []string{"github.com/IBM/sarama", "github.com/twmb/franz-go"}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		checked++
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			for _, bad := range forbidden {
				require.False(t, path == bad || strings.HasPrefix(path, bad+"/"), "%s imports %s", name, path)
			}
		}
	}
	require.NotZero(t, checked)
}
