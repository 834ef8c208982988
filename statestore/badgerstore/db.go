package badgerstore

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/weirstream/weir/internal/badgerlog"
	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/statestore"
)

// DefaultMemTableSize is the size of Badger's memtables when
// Options.MemTableSize is zero. Badger commits a transaction only if it fits
// in 15% of a memtable, so this also bounds what Apply writes atomically:
// about 2.4 MB, or some 25,000 rows (see Apply).
const DefaultMemTableSize = 16 << 20

// ErrClosed is returned by the methods of a closed DB. It wraps
// statestore.ErrClosed, which the stores of a closed DB return.
var ErrClosed = fmt.Errorf("badgerstore: database closed: %w", statestore.ErrClosed)

// ErrInvalid is wrapped by the errors returned for invalid arguments: an
// empty or malformed store name, an unknown kind, a malformed key, a
// negative checkpoint.
var ErrInvalid = errors.New("badgerstore: invalid argument")

// ErrReadOnly is returned by writes to a DB opened with Options.ReadOnly.
var ErrReadOnly = errors.New("badgerstore: database is read-only")

// ErrCorrupt is wrapped by the errors returned when the database holds
// something this package did not write: another layout version, or a key or
// value it cannot decode.
var ErrCorrupt = errors.New("badgerstore: corrupt database")

// ErrDamaged is wrapped by Open's error for a directory Badger cannot open
// or read: a checksum that does not match, a file cut short, an unreadable
// MANIFEST, a file the MANIFEST names gone, a database of another program
// or layout version (then ErrCorrupt too), a panic inside Badger, or a
// directory a previous run marked damaged (a read failed its checksum or
// panicked). The error names the directory, the file where Badger named
// one, and the cause. Such a directory holds nothing a changelog cannot
// rebuild: weir sets it aside and opens a new one. A directory locked by
// another process, unreadable for its permissions or on a full volume is
// not damaged, and Open's error does not wrap ErrDamaged.
var ErrDamaged = statedir.ErrDamaged

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Logger receives Badger's errors and warnings; its informational
	// messages go out at debug level. Nil means slog.Default().
	Logger *slog.Logger
	// SyncWrites makes every write, Apply included, wait for fsync. Off by
	// default: Apply writes data and checkpoints in one batch, so a crash
	// that loses a write loses its checkpoint with it, and restore replays
	// the changelog from the older checkpoint.
	SyncWrites bool
	// MemTableSize is the size of each of Badger's two memtables, in
	// bytes; zero means DefaultMemTableSize. Larger memtables use more
	// memory and let Apply write larger sets in one transaction.
	MemTableSize int64
	// ReadCacheBytes bounds the read cache: the committed values of the
	// rows that stores' Get read (and the rows they found absent), kept
	// in memory and updated by every write, so that reading a row again —
	// a staging overlay reads its base once per key per epoch — costs a
	// map lookup instead of a Badger read. Zero means
	// DefaultReadCacheBytes; a negative value turns the cache off.
	ReadCacheBytes int64
	// ReadOnly opens the database without writing to it, for offline
	// inspection; several processes may do so at once, but not while a
	// process has it open for writing. Writes fail with ErrReadOnly.
	ReadOnly bool
}

// DB is a Badger database holding the stores of one instance: every store
// and partition, keyed by store name and partition, with their changelog
// checkpoints. Open it once per directory; Badger locks the directory.
//
// A DB, its factory and its stores are safe for concurrent use; iterators
// are not. Reads never wait for writes.
type DB struct {
	bdb      *badger.DB
	dir      string
	readOnly bool
	logger   *slog.Logger

	// mu is read-held by every operation while it uses bdb, iterators'
	// Next included, and write-held by Close and DropPartition, so Close
	// waits for operations in flight and none starts after it.
	mu     sync.RWMutex
	closed bool

	itersMu sync.Mutex
	iters   map[*cursor]struct{} // open Badger iterators, released by Close

	storesMu sync.Mutex
	stores   map[storeID]openStore // the handles Factory.Open gave out

	cache *rowCache // see Options.ReadCacheBytes
}

// Open opens or creates the database in dir, and checks the checksums of
// every table in it. Opening a directory that holds a Badger database of
// another kind fails with an error wrapping ErrCorrupt and ErrDamaged; one
// Badger cannot open or read, with an error wrapping ErrDamaged.
func Open(dir string, opts Options) (*DB, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: empty directory", ErrInvalid)
	}
	if opts.MemTableSize < 0 {
		return nil, fmt.Errorf("%w: negative MemTableSize %d", ErrInvalid, opts.MemTableSize)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "badgerstore", "dir", dir)
	fail := func(err error) (*DB, error) {
		if d := statedir.NewDamage(dir, err); d != nil {
			err = d
		}
		return nil, fmt.Errorf("badgerstore: open %s: %w", dir, err)
	}
	if d := statedir.Marked(dir); d != nil && !opts.ReadOnly {
		return fail(d)
	}
	if !opts.ReadOnly {
		removed, err := statedir.RemoveEmptyMemtables(dir)
		if err != nil {
			return fail(err)
		}
		if len(removed) > 0 {
			logger.Info("badgerstore: removed the empty memtable logs a killed process left", "files", removed)
		}
	}
	// Badger panics on some damaged tables (one cut short, say), in
	// goroutines of its own: each table is opened and its checksums
	// checked here first, where a panic is recovered as damage.
	if err := statedir.CheckTables(dir, options.None); err != nil {
		return fail(err)
	}
	bdb, err := statedir.Protect(func() (*badger.DB, error) { return badger.Open(badgerOptions(dir, opts, logger)) })
	if err != nil {
		return fail(err)
	}
	_, err = statedir.Protect(func() (struct{}, error) {
		return struct{}{}, checkFormat(bdb, opts.ReadOnly)
	})
	if err != nil {
		_, _ = statedir.Protect(func() (struct{}, error) { return struct{}{}, bdb.Close() })
		if errors.Is(err, ErrCorrupt) {
			err = &statedir.Damage{Dir: dir, Reason: statedir.ReasonForeign, Err: err}
		}
		return fail(err)
	}
	return &DB{
		bdb:      bdb,
		dir:      dir,
		readOnly: opts.ReadOnly,
		logger:   logger,
		iters:    make(map[*cursor]struct{}),
		stores:   make(map[storeID]openStore),
		cache:    newRowCache(readCacheBytes(opts.ReadCacheBytes)),
	}, nil
}

// badgerOptions sizes Badger for state stores held next to the rest of an
// instance: two small memtables instead of Badger's five of 64 MB, no block
// cache (tables are read from their memory map, uncompressed), value log
// files of 64 MB instead of 1 GB.
func badgerOptions(dir string, opts Options, logger *slog.Logger) badger.Options {
	memTable := opts.MemTableSize
	if memTable == 0 {
		memTable = DefaultMemTableSize
	}
	return badger.DefaultOptions(dir).
		WithSyncWrites(opts.SyncWrites).
		WithReadOnly(opts.ReadOnly).
		WithLogger(badgerlog.New(logger)).
		WithMemTableSize(memTable).
		WithNumMemtables(2).
		// Values up to 1 MB (less with memtables under 7 MB) stay in the
		// LSM tree, so state values need no value log garbage collection;
		// larger ones go to the value log, whose files only Badger's GC
		// reclaims, and this package does not run it.
		WithValueThreshold(min(1<<20, memTable*15/100)).
		WithValueLogFileSize(64 << 20).
		// Without compression tables are read straight from their memory
		// map, so no block cache is needed.
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithNumCompactors(2).
		// Each store handle serialises its writes and Apply writes blind,
		// so Badger need not track read sets for conflicts.
		WithDetectConflicts(false).
		// Badger's expvar metrics are process-global; weir reports its own.
		WithMetricsEnabled(false)
}

// readCacheBytes is the read cache's bound for Options.ReadCacheBytes n.
func readCacheBytes(n int64) int64 {
	switch {
	case n == 0:
		return DefaultReadCacheBytes
	case n < 0:
		return 0
	}
	return n
}

// formatKey marks a database as this package's.
var formatKey = []byte{0, metaFormat}

// checkFormat marks an empty database as a state store database, and
// refuses a non-empty one without the mark or with another layout.
func checkFormat(bdb *badger.DB, readOnly bool) error {
	var empty bool
	err := bdb.View(func(txn *badger.Txn) error {
		item, err := txn.Get(formatKey)
		if err == nil {
			return item.Value(func(v []byte) error {
				if !bytes.Equal(v, layoutV1) {
					return fmt.Errorf("%w: unknown layout %q", ErrCorrupt, v)
				}
				return nil
			})
		}
		if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		it.Rewind()
		if it.Valid() {
			return fmt.Errorf("%w: not a state store database (no format key)", ErrCorrupt)
		}
		empty = true
		return nil
	})
	if err != nil || !empty || readOnly {
		return err
	}
	return bdb.Update(func(txn *badger.Txn) error { return txn.Set(formatKey, layoutV1) })
}

// Dir returns the directory the database was opened in.
func (db *DB) Dir() string { return db.dir }

// Size returns the bytes the database holds on disk: its LSM tree's
// tables and its value log, as Badger last measured them (it does every
// minute), for every store partition together.
func (db *DB) Size() (lsm, vlog int64) { return db.bdb.Size() }

// Close closes the stores and iterators still open, then the database. It
// waits for operations in flight. Closing twice is not an error.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	db.itersMu.Lock()
	for c := range db.iters {
		c.releaseLocked()
	}
	db.iters = nil
	db.itersMu.Unlock()
	db.storesMu.Lock()
	for _, open := range db.stores {
		open.base.closed.Store(true)
	}
	db.stores = nil
	db.storesMu.Unlock()
	if err := db.bdb.Close(); err != nil {
		return fmt.Errorf("badgerstore: close %s: %w", db.dir, err)
	}
	return nil
}

// acquire read-locks the database for one operation, or returns ErrClosed.
// Call release when done.
func (db *DB) acquire() error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (db *DB) release() { db.mu.RUnlock() }

// view runs fn in a read transaction.
func (db *DB) view(fn func(txn *badger.Txn) error) error {
	if err := db.acquire(); err != nil {
		return err
	}
	defer db.release()
	return db.safeView(fn)
}

// safeView runs fn in a read transaction, a panic inside Badger recovered
// as an error, and marks the directory damaged if the read found it so
// (see checkDamage). The caller holds the database's read lock.
func (db *DB) safeView(fn func(txn *badger.Txn) error) error {
	_, err := statedir.Protect(func() (struct{}, error) { return struct{}{}, db.bdb.View(fn) })
	db.checkDamage(err)
	return err
}

// checkDamage marks the directory damaged (statedir.Mark) when a read
// failed a checksum or panicked inside Badger: the rows can no longer be
// trusted, and the next Open sets the directory aside to be rebuilt.
func (db *DB) checkDamage(err error) {
	if err == nil || db.readOnly {
		return
	}
	if r := statedir.Classify(err); r != statedir.ReasonChecksum && r != statedir.ReasonPanic {
		return
	}
	db.logger.Error("badgerstore: damaged rows read; the next start rebuilds the stores from their changelogs", "err", err)
	if merr := statedir.Mark(db.dir, err); merr != nil {
		db.logger.Error("badgerstore: cannot mark the directory damaged", "err", merr)
	}
}

// op is one row write: a set, or a delete if del.
type op struct {
	key, value []byte
	del        bool
}

// write commits ops, in order, in one transaction if they fit in one, else
// through a WriteBatch that splits them into several. The caller holds the
// database's lock and must not modify the ops' slices until write returns.
func (db *DB) write(ops []op) error {
	err := db.commit(ops)
	if errors.Is(err, badger.ErrTxnTooBig) {
		return db.writeBatch(ops)
	}
	return err
}

// commit commits ops in one transaction, or returns badger.ErrTxnTooBig and
// writes nothing if they do not fit in one.
func (db *DB) commit(ops []op) error {
	if db.readOnly {
		return ErrReadOnly
	}
	if len(ops) == 0 {
		return nil
	}
	txn := db.bdb.NewTransaction(true)
	defer txn.Discard()
	if err := putOps(txn, ops); err != nil {
		return err // nothing written: ErrTxnTooBig, or a bad key
	}
	return db.settle(ops, txn.Commit())
}

// writeBatch commits ops, in order, in as many transactions as they need.
func (db *DB) writeBatch(ops []op) error {
	if db.readOnly {
		return ErrReadOnly
	}
	wb := db.bdb.NewWriteBatch()
	defer wb.Cancel()
	err := putOps(wb, ops) // on failure the batch may have committed some of them
	if err == nil {
		err = wb.Flush()
	}
	return db.settle(ops, err)
}

// rowWriter is a Badger transaction or write batch.
type rowWriter interface {
	Set(key, value []byte) error
	Delete(key []byte) error
}

// putOps sets or deletes the rows of ops in w, in order.
func putOps(w rowWriter, ops []op) error {
	for _, o := range ops {
		var err error
		if o.del {
			err = w.Delete(o.key)
		} else {
			err = w.Set(o.key, o.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// settle updates the row cache after a write of ops that returned err,
// and returns err.
func (db *DB) settle(ops []op, err error) error {
	db.cache.written(ops, err == nil)
	return err
}
