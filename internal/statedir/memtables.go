package statedir

import (
	"os"
	"path/filepath"
	"strings"
)

// RemoveEmptyMemtables removes the empty memtable logs (zero-length
// .mem files) from dir, before Badger opens it, and returns the names it
// removed. Badger refuses to open a directory holding one (its open
// returns z.NewFile, "Create a new file": badger issue 2207), and a
// process killed at the wrong moment leaves one behind, from either of
// two windows:
//
//   - a new memtable's log is created before it is sized (OpenMmapFile:
//     open with O_CREATE, then Truncate to its size), so a kill between
//     the two leaves it empty, before any write reached it;
//   - a flushed memtable's log is emptied before it is removed
//     (MmapFile.Delete: Truncate(0), Close, Remove), and its flush wrote
//     its table and named it in the MANIFEST first.
//
// Either way the file holds no entry that is not elsewhere, so removing it
// loses nothing, and the directory opens with its state rather than being
// set aside and rebuilt from the changelogs. A directory that does not
// exist has no memtables.
func RemoveEmptyMemtables(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".mem") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return removed, err
		}
		if info.Size() != 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}
