package processor

import (
	"errors"
	"fmt"
	"reflect"
)

// ErrorKind classifies a RecordError.
type ErrorKind int

const (
	// DeserializationError: the input's key or value could not be decoded,
	// or its timestamp is invalid.
	DeserializationError ErrorKind = iota + 1
	// ProcessingError: a processor returned an error or panicked.
	ProcessingError
	// SerializationError: a sink could not encode a record.
	SerializationError
)

// String names the kind.
func (k ErrorKind) String() string {
	switch k {
	case DeserializationError:
		return "deserialization"
	case ProcessingError:
		return "processing"
	case SerializationError:
		return "serialization"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// RecordError is the error a Task returns for an input record it could not
// handle. The engines hand it to the application's error policy: fail
// (stop, naming the record), skip (log and count) or dead-letter (write the
// raw input to "<topic>-dlq").
type RecordError struct {
	Kind      ErrorKind
	Topic     string
	Partition int32
	Offset    int64
	// Node is the node that failed; empty for deserialization errors.
	Node string
	Err  error
}

// Error describes the failure and names the record.
func (e *RecordError) Error() string {
	where := fmt.Sprintf("%s/%d@%d", e.Topic, e.Partition, e.Offset)
	if e.Node != "" {
		return fmt.Sprintf("processor: %s error at %s in node %s: %v", e.Kind, where, e.Node, e.Err)
	}
	return fmt.Sprintf("processor: %s error at %s: %v", e.Kind, where, e.Err)
}

// Unwrap returns the cause.
func (e *RecordError) Unwrap() error { return e.Err }

// ErrPanic is wrapped by the processing error of a user function that
// panicked; the panic value is in the message.
var ErrPanic = errors.New("processor: panic in user code")

// ErrStop is wrapped by a processor's error that must stop the
// application whatever its bad-record policy: the record is fine, the
// processor cannot go on (a full suppression buffer set to shut down).
var ErrStop = errors.New("processor: the application must stop")

// ErrTaskClosed is returned by a task used after Close.
var ErrTaskClosed = errors.New("processor: task closed")

// ErrUnknownTopic is returned by Task.Process for a record of a topic the
// task does not read.
var ErrUnknownTopic = errors.New("processor: topic not read by task")

// ErrUnknownStore is returned by Context.StateStore for a store the node is
// not connected to.
var ErrUnknownStore = errors.New("processor: unknown store")

// ErrUnknownChild is returned by Context.ForwardTo for a name that is not a
// child of the node.
var ErrUnknownChild = errors.New("processor: unknown child")

// ErrTypeMismatch is returned when a record's key or value does not have the
// type a typed processor expects — a topology wiring bug.
var ErrTypeMismatch = errors.New("processor: type mismatch")

// As converts x to T: nil becomes T's zero value; a value of another type is
// an error wrapping ErrTypeMismatch.
func As[T any](x any) (T, error) {
	var zero T
	if x == nil {
		return zero, nil
	}
	t, ok := x.(T)
	if !ok {
		return zero, fmt.Errorf("%w: got %T, want %s", ErrTypeMismatch, x, reflectName[T]())
	}
	return t, nil
}

func reflectName[T any]() string {
	return reflect.TypeFor[T]().String()
}

// ErrReadOnly is returned by writes to a global store through a task: only
// the engine's global reader writes it (see GlobalStore).
var ErrReadOnly = errors.New("processor: global store is read-only in a task")

// ErrInvalidGraph is wrapped by Validate's errors.
var ErrInvalidGraph = errors.New("processor: invalid graph")
