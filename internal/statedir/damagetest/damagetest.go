// Package damagetest damages a stopped instance's Badger directories the
// ways an operator's disk can: random bytes written into its table and
// value-log files, those files cut to half, the MANIFEST overwritten, the
// table files deleted. Tests use it to check that weir rebuilds what it
// finds damaged.
package damagetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// The kinds of damage.
const (
	RandomBytes = "random-bytes" // 64 random bytes at ¼, ½ and ¾ of each .sst and .vlog
	Truncate    = "truncate"     // each .sst and .vlog cut to half its size
	Manifest    = "manifest"     // MANIFEST overwritten with random bytes
	Delete      = "delete"       // every .sst deleted
)

// Kinds lists every kind.
var Kinds = []string{RandomBytes, Truncate, Manifest, Delete}

// Damage damages the Badger directory dir (not open) as kind says, with
// bytes from seed, and returns the files it changed. A damage that finds
// no file to change is an error.
func Damage(dir, kind string, seed uint64) ([]string, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, e := range entries {
		name, path := e.Name(), filepath.Join(dir, e.Name())
		data := strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".vlog")
		var err error
		switch {
		case kind == RandomBytes && data:
			err = scribble(path, rng)
		case kind == Truncate && data:
			err = truncateHalf(path)
		case kind == Manifest && name == "MANIFEST":
			err = overwrite(path, rng)
		case kind == Delete && strings.HasSuffix(name, ".sst"):
			err = os.Remove(path)
		default:
			continue
		}
		if err != nil {
			return changed, err
		}
		changed = append(changed, name)
	}
	if len(changed) == 0 {
		return nil, fmt.Errorf("damagetest: %s: no file to damage in %s", kind, dir)
	}
	return changed, nil
}

func scribble(path string, rng *rand.Rand) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return errors.Join(err, f.Close())
	}
	for _, at := range []int64{st.Size() / 4, st.Size() / 2, st.Size() * 3 / 4} {
		b := make([]byte, 64)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if _, err := f.WriteAt(b, at); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return f.Close()
}

func truncateHalf(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.Truncate(path, st.Size()/2)
}

func overwrite(path string, rng *rand.Rand) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	b := make([]byte, max(st.Size(), 64))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return os.WriteFile(path, b, 0o644)
}
