package topology

import (
	"errors"
	"fmt"

	"github.com/weirstream/weir/processor"
)

// ErrInvalidTopology is wrapped by every error Build returns.
var ErrInvalidTopology = errors.New("topology: invalid topology")

// ErrBadKey is wrapped by the errors of StoreCodec.ParseKey for text that
// is no key of the store's key type.
var ErrBadKey = errors.New("topology: malformed key")

// ErrSuppressBufferFull is wrapped by the error of a Suppress whose buffer,
// set to ShutDownWhenFull, went over its bound. It wraps
// processor.ErrStop: the application stops whatever its bad-record policy,
// as Kafka Streams' shutDownWhenFull stops the instance.
var ErrSuppressBufferFull = fmt.Errorf("topology: suppression buffer full: %w", processor.ErrStop)

// ErrNoPartitionTime is the error of UsePartitionTimeOnInvalidTimestamp for
// an invalid timestamp in a partition that has no time yet.
var ErrNoPartitionTime = errors.New("topology: invalid record timestamp and no partition time yet")
