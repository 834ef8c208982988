package offsets

import (
	"errors"

	"github.com/weirstream/weir/internal/statedir"
)

// ErrCorrupt is wrapped by every error a decoder returns for bytes that are
// not a valid record: an unknown format version, truncated input, trailing
// bytes, lengths or counts the input cannot hold, non-minimal varints, or
// field values that break a record's invariants (see Plan.Validate). Reading
// a log whose stored record does not decode returns it as well.
var ErrCorrupt = errors.New("offsets: corrupt record")

// ErrInvalid is wrapped by the errors returned for a record or argument that
// breaks the package's invariants: a negative batch, epoch or offset,
// unsorted or duplicate partitions, a range that ends before it starts, an
// empty topic or namespace name.
var ErrInvalid = errors.New("offsets: invalid argument")

// ErrConflict is wrapped by the errors returned when a write would rewrite
// history: a plan that differs from the plan already stored for its batch, a
// commit that differs from the stored commit, a plan that skips or goes back
// a batch, a new plan while the previous one is still pending, or an epoch
// that is not greater than the latest one, or discarding a committed plan.
var ErrConflict = errors.New("offsets: conflict")

// ErrNoPlan is wrapped by the error WAL.WriteCommit returns when no plan is
// stored for the batch.
var ErrNoPlan = errors.New("offsets: no plan for batch")

// ErrClosed is returned by every operation on a closed Log and on the WALs
// it handed out. Close itself returns nil when called again.
var ErrClosed = errors.New("offsets: closed")

// ErrDamaged is wrapped by Open's error for a directory Badger cannot open
// or read (see Open). The log can be rebuilt from Kafka's committed
// offsets: weir sets the directory aside and opens a new one (see the
// package documentation, "A lost log").
var ErrDamaged = statedir.ErrDamaged
