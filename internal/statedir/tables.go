package statedir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// CheckTables opens every table file (.sst) in dir read-only and checks
// its checksums, before Badger opens the directory; compression is the
// one the directory is opened with. Badger opens its
// tables in goroutines of its own, where a panic on a damaged file (one
// cut short, say) cannot be recovered and ends the process; opened here,
// one at a time in the caller's goroutine, such a file is a *Damage
// naming it. A directory that does not exist has no tables.
func CheckTables(dir string, compression options.CompressionType) error {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		// Badger does not record a table's compression: weir writes
		// uncompressed tables, another program's may be compressed (and
		// are refused later, by their format key, as foreign).
		var err error
		for i, c := range append([]options.CompressionType{compression}, options.None, options.Snappy, options.ZSTD) {
			_, cerr := Protect(func() (struct{}, error) { return struct{}{}, checkTable(path, c) })
			if cerr == nil {
				err = nil
				break
			}
			if i == 0 {
				err = cerr // the cause under the directory's own compression
			}
		}
		if err != nil {
			if d := NewDamage(dir, err); d != nil {
				d.File = e.Name()
				return d
			}
			return err
		}
	}
	return nil
}

// checkTable opens one table, which verifies its checksums, and closes it
// without deleting it (Table.DecrRef would).
func checkTable(path string, c options.CompressionType) error {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && mf == nil {
		return err
	}
	t, err := table.OpenTable(mf, table.Options{ChkMode: options.OnTableRead, Compression: c, BlockSize: 4 << 10})
	if err != nil {
		return fmt.Errorf("table %s: %w", filepath.Base(path), err) // OpenTable closed mf
	}
	return t.MmapFile.Close(-1)
}
