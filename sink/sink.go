package sink

import (
	"context"
	"fmt"
	"time"
)

// Sink is an external store written exactly once, per task, by the
// protocol in the package doc. Implementations must be safe for
// concurrent use: the writes of different tasks may run at once.
type Sink interface {
	// Claim makes the caller the task's one writer and returns the
	// progress the store committed for the task (an empty position if
	// none), for the sink the topology's ToSink(name) writes (Batch.Sink
	// in writes): its position, the records its writes refused since
	// weir's last Kafka commit, and the claim's Token. Every earlier
	// claim is fenced from then on: writes carry their claim's token and
	// generation, and the store refuses a token that is not the latest
	// claim's. A claim whose generation is older than the stored one
	// fences nobody: its Token is -1, which no write may carry. It is
	// called when an instance acquires the task, before the task
	// processes anything.
	Claim(ctx context.Context, name string, task Task, generation int32) (Progress, error)
	// Write stores b's records and b.To as the task's position, in one
	// transaction: all or nothing; with them, the ids of the records it
	// left out because Batch.Bad took them (Progress.Refused). It
	// refuses (ErrFenced) a write whose Token is not the task's latest
	// claim's, and leaves out records whose input the stored position
	// covers, so that a write repeated after an unknown outcome changes
	// nothing.
	Write(ctx context.Context, b *Batch) error
}

// Task names a task: a sub-topology of the topology and a partition of
// its input topics.
type Task struct {
	Subtopology int
	Partition   int32
}

// String returns the task as Kafka Streams writes task ids: "1_3".
func (t Task) String() string { return fmt.Sprintf("%d_%d", t.Subtopology, t.Partition) }

// Record is one record a task wrote to the sink: its key and value
// encoded by the stream's serdes, and the input record whose processing
// wrote it.
type Record struct {
	Key       []byte
	Value     []byte // nil for a tombstone
	Timestamp time.Time
	Headers   []Header
	// Source and Offset name the input record being processed when the
	// record was written; Offset is -1 for a record a wall-clock
	// punctuator wrote. Index counts the records that input wrote to
	// this sink before this one.
	Source TopicPartition
	Offset int64
	Index  int
}

// ID returns the record's id: its input and index.
func (r Record) ID() RecordID { return RecordID{Source: r.Source, Offset: r.Offset, Index: r.Index} }

// RecordID names a record a task wrote to a sink by the input record
// that wrote it and its index among that input's records to the sink:
// the same on every replay of the input.
type RecordID struct {
	Source TopicPartition
	Offset int64
	Index  int
}

// Progress is what a store holds for a task: its position, and the
// records its writes since weir's last Kafka commit refused (see
// Batch.Bad and Batch.Refused). A replay of that
// write's input — its Kafka commit having failed — hands those records
// to the bad-record policy again, so that their dead letters, which
// went into the failed commit, are written.
type Progress struct {
	Position Position
	Refused  []Refusal
	// Token is the claim's fencing token (-1: the claim was refused).
	Token int64
}

// Refusal is a record a write left out, and the store's error.
type Refusal struct {
	ID    RecordID
	Error string
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Batch is one task's share of an epoch or batch for one sink.
type Batch struct {
	// Sink is the name the topology's ToSink used.
	Sink string
	// Task is the task that wrote the records.
	Task Task
	// Generation is the writer's group generation and Token its claim's
	// (see Sink.Claim): the store refuses the write unless Token is the
	// task's latest claim (ErrFenced).
	Generation int32
	Token      int64
	// From is the position the writer knows the store holds for the task
	// (its claim's, or its own last write's); To is the position after
	// the records: the write's id.
	From, To Position
	// Records are in the order the task wrote them.
	Records []Record
	// Refused are the refusals of earlier writes whose Kafka commit has
	// not happened (the claim's, and those of writes since the last
	// commit): the sink stores them in the task's progress with the
	// write's own, so that a replay still finds them (Progress.Refused).
	Refused []Refusal
	// Bad applies the bad-record policy to a record the store refuses,
	// with the store's error. nil: the record is left out (skipped or
	// dead-lettered) and the write goes on; an error: the write must
	// fail with it.
	Bad func(r Record, cause error) error
}
