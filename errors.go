package weir

import (
	"errors"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/query"
)

// ErrConfig is wrapped by each of New's errors about the options (and a
// nil topology): an invalid value, a missing required option, or two
// options that contradict each other (a heartbeat interval not below the
// session timeout).
var ErrConfig = errors.New("weir: invalid configuration")

// ErrRunning is returned by Run while the App is already running.
var ErrRunning = errors.New("weir: already running")

// ErrHTTPForbidden, wrapped by the error of a WithHTTPAuth hook, refuses
// the request with 403 Forbidden instead of 401 Unauthorized.
var ErrHTTPForbidden = query.ErrForbidden

// The errors of the preflight (Run, Check) and of an output no retry
// delivers (Run). Match them with errors.Is.
var (
	// ErrMissingTopic: a source or sink topic does not exist.
	ErrMissingTopic = tasks.ErrMissingTopic
	// ErrCoPartitioning: the source topics of a sub-topology — a join's
	// two sides, a repartition topic among them — have different
	// partition counts.
	ErrCoPartitioning = tasks.ErrCoPartitioning
	// ErrInternalTopic: an existing repartition, changelog or dead-letter
	// topic has another partition count than weir needs, or a changelog is
	// not compacted.
	ErrInternalTopic = tasks.ErrInternalTopic
	// ErrNotAuthorized: the cluster refuses to describe a topic; the
	// error names the ACL it needs.
	ErrNotAuthorized = tasks.ErrNotAuthorized
	// ErrTransactionsUnavailable: exactly-once cannot run on the cluster —
	// brokers too old, a transactional id not authorized, no transaction
	// coordinator.
	ErrTransactionsUnavailable = kafka.ErrTransactionsUnavailable
	// ErrOutputFatal: an output no retry delivers — its topic does not
	// exist, writing it is not authorized, or the broker rejects the
	// record.
	ErrOutputFatal = tasks.ErrOutputFatal
)
