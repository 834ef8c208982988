package tasks

import "errors"

// ErrRewind is wrapped by Commit's (and Task.Process's) errors that the
// engine survives by rewinding: the open transaction was aborted (or its
// outcome is unknown and the producer was re-created), so every task must
// go back to the last committed offsets and drop its state — engines do
// that by ending the group session (claims restart at the committed
// offsets) and releasing the tasks (state is restored from the committed
// changelog). Under at-least-once Commit returns it when the member was
// removed from the group, or when an output was not delivered for a cause
// that heals (see Commit).
var ErrRewind = errors.New("runtime: epoch not committed; rewind to the committed offsets")

// ErrCommitLater wraps an at-least-once offset commit that failed after the
// outputs were acknowledged: nothing is lost, the next commit carries the
// offsets (and applies the state kept since).
var ErrCommitLater = errors.New("runtime: offsets not committed; the next commit carries them")

// ErrDiskFull is the cause the App reports (Retrying, /readyz 503) while
// the state volume's free space is below Config.MinFreeDisk.
var ErrDiskFull = errors.New("runtime: disk full")

// ErrExternalRecord is wrapped by the error a sink write fails with when
// a record the store refuses falls under the Fail bad-record policy: the
// application stops.
var ErrExternalRecord = errors.New("runtime: a record the external sink refuses")

// errGlobalFatal marks the global reader's failures that retrying does not
// cure: a bad record under the Fail policy, a store that refuses a write.
var errGlobalFatal = errors.New("the global reader cannot go on")

// errGlobalBatchRead is what a globalBatch, a write-only view of a
// global store for one Badger batch, returns to a read.
var errGlobalBatchRead = errors.New("runtime: a global table's batch is written, never read")

// ErrOutputFatal is wrapped by the errors for an output that no retry can
// deliver — its topic does not exist, writing it is not authorized, or
// the broker refuses the record — which stop the application under both
// guarantees instead of failing (or, under exactly-once, rewinding) again
// and again.
var ErrOutputFatal = errors.New("runtime: output cannot be delivered")

// ErrCoPartitioning is wrapped by the error for source topics of one
// sub-topology with different partition counts.
var ErrCoPartitioning = errors.New("runtime: topics are not co-partitioned")

// ErrMissingTopic is wrapped by the errors for a source or sink topic the
// cluster does not have.
var ErrMissingTopic = errors.New("runtime: topic does not exist")

// errNoCount is wrapped by planTopics' errors for a source topic without a
// partition count (Preflight reports a missing topic itself).
var errNoCount = errors.New("runtime: no partition count")

// ErrInternalTopic is wrapped by the errors for an existing internal topic
// that does not fit: another partition count than weir needs, or a
// changelog that is not compacted.
var ErrInternalTopic = errors.New("runtime: internal topic does not fit")

// ErrNotAuthorized is wrapped by the errors for a topic the cluster does
// not let the application describe: an ACL is missing.
var ErrNotAuthorized = errors.New("runtime: not authorized")

// ErrUnknownStore is wrapped by QueryStore's error for a store the topology
// does not have, or cannot be queried (no codecs: a store of AddStore).
var ErrUnknownStore = errors.New("runtime: unknown store")

// ErrNotOwner is wrapped by QueryStore's error when this instance does not
// run the store's task for the partition, or still restores it.
var ErrNotOwner = errors.New("runtime: this instance does not run the partition")

// ErrNoCopy is wrapped by QueryCopy's error when this instance's copy of a
// store partition cannot serve: its lag is over the bound, or unknown (no
// checkpoint yet, or a store that is not logged).
var ErrNoCopy = errors.New("runtime: no copy of the partition within the lag bound here")

// errNotSent wraps an output the producer or sink did not take (a stop, a
// closed producer, a doomed transaction): a failure of the output path, not
// of the record being processed, so no bad-record policy applies to it.
var errNotSent = errors.New("runtime: output not sent")
