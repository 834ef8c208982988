package offsets

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/weirstream/weir/internal/badgerlog"
	"github.com/weirstream/weir/internal/statedir"
)

// DefaultRetain is how many batches and epochs a namespace keeps when
// Options.Retain is zero.
const DefaultRetain = 100

// Options configure Open. The zero value is ready to use.
type Options struct {
	// Retain is how many of the latest batches (plans with their commits)
	// and epochs each namespace keeps; older ones are deleted after each
	// WriteCommit and AppendEpoch. A pending plan is never deleted. Zero
	// means DefaultRetain; a negative value is an error.
	Retain int
	// Logger receives Badger's errors and warnings; its informational
	// messages go out at debug level. Nil means slog.Default().
	Logger *slog.Logger
}

// Log is a Badger database holding the logs of one or more namespaces (see
// Namespace). Open it once per directory: Badger locks the directory, so a
// second Open of the same directory fails until the first Log is closed.
//
// A Log and its WALs are safe for concurrent use. Writes to one namespace
// are serialised; reads never wait for writes.
type Log struct {
	db     *badger.DB
	dir    string
	retain int

	// mu is read-held by every operation while it uses db and write-held
	// by Close, so Close waits for operations in flight and none starts
	// after it.
	mu     sync.RWMutex
	closed bool

	walsMu sync.Mutex
	wals   map[string]*WAL
}

// Open opens or creates the log in dir. Every write is synced to disk
// before it returns. Opening a directory that holds a Badger database of
// another kind fails with an error wrapping ErrCorrupt and ErrDamaged; one
// Badger cannot open or read (a checksum, a file cut short or gone, an
// unreadable MANIFEST, a panic inside Badger), with an error wrapping
// ErrDamaged that names the directory, the file and the cause. Open
// checks every record's checksum.
func Open(dir string, opts Options) (*Log, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: empty directory", ErrInvalid)
	}
	retain := opts.Retain
	switch {
	case retain == 0:
		retain = DefaultRetain
	case retain < 0:
		return nil, fmt.Errorf("%w: negative Retain %d", ErrInvalid, retain)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	fail := func(err error) (*Log, error) {
		if d := statedir.NewDamage(dir, err); d != nil {
			err = d
		}
		return nil, fmt.Errorf("offsets: open %s: %w", dir, err)
	}
	removed, err := statedir.RemoveEmptyMemtables(dir)
	if err != nil {
		return fail(err)
	}
	if len(removed) > 0 {
		logger.Info("offsets: removed the empty memtable logs a killed process left", "dir", dir, "files", removed)
	}
	// Badger panics on some damaged tables (one cut short, say), in
	// goroutines of its own: each table is opened and its checksums
	// checked here first, where a panic is recovered as damage.
	if err := statedir.CheckTables(dir, options.None); err != nil {
		return fail(err)
	}
	db, err := statedir.Protect(func() (*badger.DB, error) {
		return badger.Open(badgerOptions(dir, logger.With("component", "offsets", "dir", dir)))
	})
	if err != nil {
		return fail(err)
	}
	if _, err := statedir.Protect(func() (struct{}, error) { return struct{}{}, checkLog(db) }); err != nil {
		_, _ = statedir.Protect(func() (struct{}, error) { return struct{}{}, db.Close() })
		if errors.Is(err, ErrCorrupt) {
			err = &statedir.Damage{Dir: dir, Reason: statedir.ReasonForeign, Err: err}
		}
		return fail(err)
	}
	return &Log{db: db, dir: dir, retain: retain, wals: make(map[string]*WAL)}, nil
}

// badgerOptions sizes Badger for a small, write-mostly log: records are
// tens of bytes to a few kilobytes and a namespace keeps about Retain of
// each, so the defaults (64 MB memtables, five of them, a 256 MB block
// cache, 1 GB value log files) would reserve memory and disk the log never
// uses.
func badgerOptions(dir string, logger *slog.Logger) badger.Options {
	return badger.DefaultOptions(dir).
		// The point of a write-ahead log: a plan is on disk before its
		// batch runs.
		WithSyncWrites(true).
		WithLogger(badgerlog.New(logger)).
		// 8 MB is the smallest memtable that keeps the default 1 MB value
		// threshold valid (a transaction may use 15% of a memtable), so
		// every value stays in the LSM tree and the value log needs no
		// garbage collection. It also caps one transaction, hence one
		// record, at about 1.2 MB: tens of thousands of partitions in a plan.
		WithMemTableSize(8 << 20).
		WithNumMemtables(2).
		WithValueLogFileSize(16 << 20).
		// Records are small varint-packed values: compression gains little,
		// and without it tables are read straight from their memory map,
		// so no block cache is needed.
		WithCompression(options.None).
		WithBlockCacheSize(0).
		// Two compactors is Badger's minimum when compaction is on.
		WithNumCompactors(2).
		// Writes to a namespace are serialised by the WAL, so Badger need
		// not track read sets for conflicts.
		WithDetectConflicts(false).
		// Badger's expvar metrics are process-global; weir reports its own.
		WithMetricsEnabled(false)
}

// checkLog checks the format (checkFormat) and that every record reads: the log holds a few hundred small records, and
// a damaged one found here is set aside at start instead of failing a
// batch's recovery.
func checkLog(db *badger.DB) error {
	if err := checkFormat(db); err != nil {
		return err
	}
	return db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if _, err := it.Item().ValueCopy(nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkFormat marks an empty database as an offsets log, and refuses a
// non-empty database without the mark or with an unknown layout.
func checkFormat(db *badger.DB) error {
	return db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(formatKey)
		if err == nil {
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			if !bytes.Equal(v, layoutV1) {
				return fmt.Errorf("%w: unknown log layout %v", ErrCorrupt, v)
			}
			return nil
		}
		if !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		it := txn.NewIterator(badger.IteratorOptions{})
		it.Rewind()
		empty := !it.Valid()
		it.Close()
		if !empty {
			return fmt.Errorf("%w: not an offsets log (no %q key)", ErrCorrupt, formatKey)
		}
		return txn.Set(formatKey, layoutV1)
	})
}

// Dir returns the directory the log was opened in.
func (l *Log) Dir() string { return l.dir }

// Namespace returns the WAL of one namespace, such as an application id
// or an engine instance; namespaces in one Log are independent. The name
// must be non-empty UTF-8 of at most 255 bytes without '/' or control
// characters (the error wraps ErrInvalid). Calls with the same name return
// the same *WAL.
func (l *Log) Namespace(name string) (*WAL, error) {
	if err := validateNamespace(name); err != nil {
		return nil, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	l.walsMu.Lock()
	defer l.walsMu.Unlock()
	if w, ok := l.wals[name]; ok {
		return w, nil
	}
	w := &WAL{
		log:     l,
		name:    name,
		write:   make(chan struct{}, 1),
		offsets: logPrefix(name, logOffsets),
		commits: logPrefix(name, logCommits),
		epochs:  logPrefix(name, logEpochs),
	}
	l.wals[name] = w
	return w, nil
}

// Namespaces returns the names of the namespaces that have records, in
// byte order.
func (l *Log) Namespaces() ([]string, error) {
	var names []string
	err := l.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); {
			k := it.Item().Key()
			i := bytes.IndexByte(k, '/')
			if i < 0 { // formatKey
				it.Next()
				continue
			}
			names = append(names, string(k[:i]))
			// Skip the namespace: '0' is the byte after '/'.
			it.Seek(append(append([]byte(nil), k[:i]...), '0'))
		}
		return nil
	})
	// Keys sort "app-b/" before "app/": sort the names themselves.
	slices.Sort(names)
	return names, err
}

// Close closes the database, waiting for operations in flight. It returns
// nil when called again; every other operation returns ErrClosed after it.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if err := l.db.Close(); err != nil {
		return fmt.Errorf("offsets: close %s: %w", l.dir, err)
	}
	return nil
}

// view runs fn in a read-only transaction unless the log is closed.
func (l *Log) view(fn func(*badger.Txn) error) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	return l.db.View(fn)
}

// update runs fn in a read-write transaction, synced on commit, unless the
// log is closed.
func (l *Log) update(fn func(*badger.Txn) error) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	return l.db.Update(fn)
}
