package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README shows this program's main function as its first program: the
// two must stay the same text. (This test also makes go test ./... compile
// the program; it needs a broker to run, see the package doc.)
func TestReadmeShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)

	start := strings.Index(string(src), "func main() {\n")
	require.GreaterOrEqual(t, start, 0)
	program := string(src[start:])

	block := "```go\n" + program + "```\n"
	require.Contains(t, string(readme), block,
		"README.md's program differs from examples/quickstart/main.go's main: copy main (from func main to the end) into the README's first go block")
}
