package docs

import (
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafkatest"
)

// The table "What CI runs" of docs/reliability.md states which long tests
// CI runs in every run and which in turns: its rows are the rotation of
// kafkatest (each turn's tests, none more, none missing), the row "every
// run" holds every other long test, and every long test of the
// repository is in exactly one row. .ci/run picks the turn with the same
// modulus and hands the seed to the tests.
func TestRotationTableIsTheRotation(t *testing.T) {
	rows := rotationTable(t)
	want := map[string][]string{}
	for name, turn := range kafkatest.Rotation() {
		want[strconv.Itoa(turn)] = append(want[strconv.Itoa(turn)], name)
	}
	for turn := range kafkatest.Turns {
		key := strconv.Itoa(turn)
		require.NotEmpty(t, want[key], "turn %d of kafkatest's rotation has no test", turn)
		require.ElementsMatch(t, want[key], rows[key], "docs/reliability.md's row of turn %d against kafkatest's rotation", turn)
	}
	for key := range rows {
		if key != "every run" {
			require.Contains(t, want, key, "docs/reliability.md has a row of turn %s, which kafkatest's rotation has not", key)
		}
	}

	// Every long test in one row; every row's test a long test.
	long := longTests(t)
	seen := map[string]string{}
	for key, names := range rows {
		for _, name := range names {
			fn, _, _ := strings.Cut(name, "/")
			require.Contains(t, long, fn, "docs/reliability.md names %s, which is no test calling kafkatest.Long", name)
			require.NotContains(t, seen, fn, "%s is in two rows of docs/reliability.md (%s and %s)", fn, seen[fn], key)
			seen[fn] = key
		}
	}
	for _, fn := range slices.Sorted(maps.Keys(long)) {
		require.Contains(t, seen, fn, "%s (%s) calls kafkatest.Long: put it in a row of docs/reliability.md's \"What CI runs\" (and in kafkatest's rotation if it runs in turns)", fn, long[fn])
	}

	ciRuns(t, `^ci_seed=`)
	ciRuns(t, `^export WEIR_LONG_ROTATION=\$ci_seed `)
	ciRuns(t, `\$\(\(ci_seed % `+strconv.Itoa(kafkatest.Turns)+`\)\)`)
}

// rotationTable reads the rows of the table under "## What CI runs" in
// docs/reliability.md: "every run" or a turn's number, and the test
// names in backquotes.
func rotationTable(t *testing.T) map[string][]string {
	doc := readFile(t, "docs/reliability.md")
	_, section, ok := strings.Cut(doc, "\n## What CI runs\n")
	require.True(t, ok, "docs/reliability.md has no section \"## What CI runs\"")
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile(`(?m)^\| (every run|turn (\d+)) \| ([^|]*) \|`)
	name := regexp.MustCompile("`(Test[^`]*)`")
	rows := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		key := m[1]
		if m[2] != "" {
			key = m[2]
		}
		for _, n := range name.FindAllStringSubmatch(m[3], -1) {
			rows[key] = append(rows[key], n[1])
		}
	}
	require.NotEmpty(t, rows["every run"], "docs/reliability.md's \"What CI runs\" has no row \"every run\"")
	return rows
}

// longTests returns every test function of the repository whose body
// calls kafkatest.Long, with its file.
func longTests(t *testing.T) map[string]string {
	fn := regexp.MustCompile(`^func (Test\w+)\(t \*testing\.T\) \{$`)
	long := map[string]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "third_party" || d.Name() == "bench" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		current := ""
		for line := range strings.SplitSeq(readFile(t, path), "\n") {
			if m := fn.FindStringSubmatch(line); m != nil {
				current = m[1]
			} else if strings.HasPrefix(line, "func ") {
				current = ""
			}
			if current != "" && strings.Contains(line, "kafkatest.Long(t)") {
				long[current] = path
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, long)
	return long
}
