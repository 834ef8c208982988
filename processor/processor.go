package processor

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/statestore"
)

// Processor handles one record at a time. Implementations may also implement
// Initializer and Closer. A processor instance belongs to one task and is
// never called concurrently.
type Processor[KIn, VIn, KOut, VOut any] interface {
	// Process handles r; it forwards results with ctx.Forward. A returned
	// error is a processing error for the input record, handled by the
	// application's error policy (fail, skip or dead-letter).
	Process(ctx Context[KOut, VOut], r Record[KIn, VIn]) error
}

// Initializer is implemented by processors that need setup: looking up
// stores, scheduling punctuators. Init runs once per task before the first
// record.
type Initializer[KOut, VOut any] interface {
	Init(ctx Context[KOut, VOut]) error
}

// Closer is implemented by processors that hold resources. Close runs once
// when the task closes.
type Closer interface {
	Close() error
}

// Func adapts a function to the Processor interface.
type Func[KIn, VIn, KOut, VOut any] func(ctx Context[KOut, VOut], r Record[KIn, VIn]) error

// Process calls f.
func (f Func[KIn, VIn, KOut, VOut]) Process(ctx Context[KOut, VOut], r Record[KIn, VIn]) error {
	return f(ctx, r)
}

// Supplier returns a new processor instance; it is called once per task.
type Supplier[KIn, VIn, KOut, VOut any] func() Processor[KIn, VIn, KOut, VOut]

// PunctuationType says which clock drives a punctuator.
type PunctuationType int

const (
	// StreamTime punctuators fire as records advance the task's stream time
	// (the largest record timestamp seen). Without input they never fire.
	StreamTime PunctuationType = iota + 1
	// WallClockTime punctuators fire as the engine's clock advances,
	// whether records arrive or not.
	WallClockTime
)

// String names the punctuation type.
func (p PunctuationType) String() string {
	switch p {
	case StreamTime:
		return "stream-time"
	case WallClockTime:
		return "wall-clock-time"
	}
	return fmt.Sprintf("PunctuationType(%d)", int(p))
}

// Punctuator is a scheduled callback. It receives the time (stream or wall
// clock) at which it fires and may forward records through the Context it was
// scheduled on.
type Punctuator func(ts time.Time) error

// Cancellable cancels a scheduled punctuator.
type Cancellable interface {
	Cancel()
}

// TaskID names a task: a sub-topology and the partition it processes.
type TaskID struct {
	Subtopology int
	Partition   int32
}

// String formats the id like Kafka Streams does ("0_3").
func (id TaskID) String() string { return fmt.Sprintf("%d_%d", id.Subtopology, id.Partition) }

// Context is a processor's view of its task. It is only valid inside the
// calls the task makes (Init, Process, punctuators) and must not be used from
// other goroutines.
type Context[KOut, VOut any] interface {
	// Forward sends r to every child of the processor.
	Forward(r Record[KOut, VOut]) error
	// ForwardTo sends r to the named child only.
	ForwardTo(child string, r Record[KOut, VOut]) error
	// StateStore returns a store connected to this processor. Assert it to
	// statestore.KeyValueStore, WindowStore or SessionStore, or use the
	// typed helpers KeyValueStore, WindowStore and SessionStore.
	StateStore(name string) (statestore.Store, error)
	// Schedule calls fn every interval of the given clock.
	Schedule(interval time.Duration, typ PunctuationType, fn Punctuator) (Cancellable, error)
	// TaskID returns the task's id.
	TaskID() TaskID
	// ApplicationID returns the application's id.
	ApplicationID() string
	// NodeName returns the name of the processor's node.
	NodeName() string
	// StreamTime returns the task's stream time: the largest record
	// timestamp seen, or the zero time before the first record.
	StreamTime() time.Time
	// Count adds n to the task counter name (see the Metric constants).
	Count(name string, n int64)
}

// Task counters maintained by weir's own processors.
const (
	// MetricDroppedLate counts records that arrived after their window
	// closed (window end + grace ≤ stream time).
	MetricDroppedLate = "dropped-records-late"
	// MetricDroppedNull counts records an aggregation or join dropped because
	// their key or value was null.
	MetricDroppedNull = "dropped-records-null"
	// MetricDroppedExpired counts join records whose window had expired.
	// weir's own stream-stream joins no longer drop such records (they
	// join what the other side still holds, as Kafka Streams 4.4 does);
	// custom processors may still count them here.
	MetricDroppedExpired = "dropped-records-expired"
	// MetricDroppedStale counts foreign-key join responses dropped because
	// the left value they answer has since been replaced or deleted.
	MetricDroppedStale = "dropped-records-stale"
)

// KeyValueStore looks up the key-value store name and returns a typed view.
func KeyValueStore[K, V, KOut, VOut any](ctx Context[KOut, VOut], name string, k statestore.Codec[K], v statestore.Codec[V]) (*statestore.KV[K, V], error) {
	s, err := storeAs[statestore.KeyValueStore](ctx, name)
	if err != nil {
		return nil, err
	}
	return statestore.NewKV(s, k, v), nil
}

// WindowStore looks up the window store name and returns a typed view.
func WindowStore[K, V, KOut, VOut any](ctx Context[KOut, VOut], name string, k statestore.Codec[K], v statestore.Codec[V]) (*statestore.Windowed[K, V], error) {
	s, err := storeAs[statestore.WindowStore](ctx, name)
	if err != nil {
		return nil, err
	}
	return statestore.NewWindowed(s, k, v), nil
}

// SessionStore looks up the session store name and returns a typed view.
func SessionStore[K, V, KOut, VOut any](ctx Context[KOut, VOut], name string, k statestore.Codec[K], v statestore.Codec[V]) (*statestore.Sessions[K, V], error) {
	s, err := storeAs[statestore.SessionStore](ctx, name)
	if err != nil {
		return nil, err
	}
	return statestore.NewSessions(s, k, v), nil
}

func storeAs[S statestore.Store, KOut, VOut any](ctx Context[KOut, VOut], name string) (S, error) {
	var zero S
	st, err := ctx.StateStore(name)
	if err != nil {
		return zero, err
	}
	s, ok := st.(S)
	if !ok {
		return zero, fmt.Errorf("processor: store %q is a %T, not a %s", name, st, reflectName[S]())
	}
	return s, nil
}
