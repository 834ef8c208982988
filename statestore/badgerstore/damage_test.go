package badgerstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/internal/statedir/damagetest"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// TestDamageDecision is the set-aside-and-rebuild decision: which errors
// opening or reading a directory are damage (set aside, rebuilt), with
// which reason, and which are not (returned as they are; the hint about a
// second instance only for a lock).
func TestDamageDecision(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		reason string // "" for not damage
		locked bool
	}{
		{"checksum", errors.New(`Opening table: "/s/000001.sst": failed to verify checksum for table`), statedir.ReasonChecksum, false},
		{"bad manifest", errors.New("manifest has bad magic"), statedir.ReasonManifest, false},
		{"truncated", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), statedir.ReasonTruncated, false},
		{"missing table", errors.New("file does not exist for table 3"), statedir.ReasonMissing, false},
		{"missing file", fmt.Errorf("open 000002.vlog: %w", os.ErrNotExist), statedir.ReasonMissing, false},
		{"panic", &statedir.PanicError{Value: "runtime error: slice bounds out of range"}, statedir.ReasonPanic, false},
		{"foreign", &statedir.Damage{Reason: statedir.ReasonForeign, Err: badgerstore.ErrCorrupt}, statedir.ReasonForeign, false},
		{"unknown cause", errors.New("something Badger did not like"), statedir.ReasonOther, false},
		{"lock", fmt.Errorf("Cannot acquire directory lock on %q: %w", "/s", syscall.EWOULDBLOCK), "", true},
		{"permission", fmt.Errorf("open /s/MANIFEST: %w", syscall.EACCES), "", false},
		{"disk full", fmt.Errorf("write /s/000003.sst: %w", syscall.ENOSPC), "", false},
		{"read-only volume", fmt.Errorf("open /s: %w", syscall.EROFS), "", false},
		{"too many files", fmt.Errorf("open /s/000001.sst: %w", syscall.EMFILE), "", false},
		{"cancelled", fmt.Errorf("opening: %w", context.Canceled), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.reason, statedir.Classify(tc.err))
			require.Equal(t, tc.locked, statedir.Locked(tc.err))
			d := statedir.NewDamage("/s", tc.err)
			if tc.reason == "" {
				require.Nil(t, d)
				return
			}
			require.ErrorIs(t, d, badgerstore.ErrDamaged)
			require.ErrorIs(t, d, tc.err)
		})
	}
	d := statedir.NewDamage("/s", errors.New(`Opening table: "/s/000001.sst": failed to verify checksum`))
	require.Equal(t, "000001.sst", d.File)
	require.Contains(t, d.Error(), "/s")
	require.Contains(t, d.Error(), "000001.sst")
}

// TestOpenDamaged damages a closed database each way and checks that Open
// returns an error wrapping ErrDamaged (never a panic), and that the
// directory set aside leaves room for a new, empty database.
func TestOpenDamaged(t *testing.T) {
	quiet := badgerstore.Options{Logger: slog.New(slog.DiscardHandler)}
	for _, kind := range damagetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "stores")
			db, err := badgerstore.Open(dir, quiet)
			require.NoError(t, err)
			kv := openKV(t, db, "counts", 0)
			for i := range 2000 {
				require.NoError(t, kv.Put([]byte(fmt.Sprintf("key-%05d", i)), make([]byte, 100)))
			}
			require.NoError(t, db.Close())
			files, err := damagetest.Damage(dir, kind, 1)
			require.NoError(t, err)

			_, err = badgerstore.Open(dir, quiet)
			require.ErrorIs(t, err, badgerstore.ErrDamaged, "damaged %v", files)
			var d *statedir.Damage
			require.ErrorAs(t, err, &d)
			t.Logf("%s: %v", kind, err)

			aside, err := statedir.SetAside(dir, timeAt(1), statedir.Keep)
			require.NoError(t, err)
			require.DirExists(t, aside)
			db, err = badgerstore.Open(dir, quiet)
			require.NoError(t, err)
			defer db.Close()
			_, ok, err := openKV(t, db, "counts", 0).Get([]byte("key-00001"))
			require.NoError(t, err)
			require.False(t, ok, "a new database is empty")
		})
	}
}

// TestOpenMarked: a directory a run marked damaged is damaged at the next
// Open.
func TestOpenMarked(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NoError(t, statedir.Mark(dir, errors.New("read: failed to verify checksum")))
	_, err = badgerstore.Open(dir, badgerstore.Options{})
	require.ErrorIs(t, err, badgerstore.ErrDamaged)
	require.ErrorContains(t, err, statedir.ReasonMarked)
}

// TestSetAsideKeeps: at most Keep copies stay, the newest.
func TestSetAsideKeeps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "stores")
	var asides []string
	for i := range statedir.Keep + 2 {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		aside, err := statedir.SetAside(dir, timeAt(i), statedir.Keep)
		require.NoError(t, err)
		asides = append(asides, aside)
	}
	for i, a := range asides {
		if i < 2 {
			require.NoDirExists(t, a)
		} else {
			require.DirExists(t, a)
		}
	}
	aside, err := statedir.SetAside(filepath.Join(t.TempDir(), "none"), timeAt(0), statedir.Keep)
	require.NoError(t, err)
	require.Empty(t, aside)
}

func timeAt(s int) time.Time { return time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC) }

// TestOpenWithAnEmptyMemtable: a process killed while Badger creates or
// deletes a memtable's log leaves an empty .mem file, which Badger's own
// Open refuses ("Create a new file"). It holds nothing, so the directory
// opens with its state instead of being set aside and rebuilt.
func TestOpenWithAnEmptyMemtable(t *testing.T) {
	quiet := badgerstore.Options{Logger: slog.New(slog.DiscardHandler)}
	dir := filepath.Join(t.TempDir(), "stores")
	db, err := badgerstore.Open(dir, quiet)
	require.NoError(t, err)
	kv := openKV(t, db, "counts", 0)
	for i := range 2000 {
		require.NoError(t, kv.Put([]byte(fmt.Sprintf("key-%05d", i)), []byte(fmt.Sprint(i))))
	}
	require.NoError(t, db.Close())
	empty := filepath.Join(dir, "00099.mem")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))

	db, err = badgerstore.Open(dir, quiet)
	require.NoError(t, err)
	defer db.Close()
	kv = openKV(t, db, "counts", 0)
	for _, i := range []int{0, 1234, 1999} {
		v, ok, err := kv.Get([]byte(fmt.Sprintf("key-%05d", i)))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, fmt.Sprint(i), string(v))
	}
	require.NoFileExists(t, empty)
}
