package microbatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
)

// Config configures the micro-batch engine; weir.WithMicroBatch selects the
// mode with it.
type Config struct {
	// Trigger decides when batches run (default Continuously()).
	Trigger Trigger
	// MaxRecordsPerBatch caps the offsets a batch covers, over all the
	// instance's partitions (0: no cap).
	MaxRecordsPerBatch int64
	// MaxBytesPerBatch caps a batch's input bytes (keys and values),
	// estimated from the average record size of earlier batches (0: no
	// cap). The first batch of a partition is capped by records only.
	MaxBytesPerBatch int64
	// PollInterval is the longest an idle engine waits before planning
	// again (default 100 ms). It plans at once when one of its partitions
	// receives a record.
	PollInterval time.Duration
	// ForEachBatch, if set, receives the records the topology's sinks write
	// in each batch, instead of Kafka. Repartition and changelog records
	// still go to Kafka. The batch id and ranges are stable across replays.
	ForEachBatch func(ctx context.Context, batchID int64, records []Record) error
	// OnProgress receives each batch's progress report.
	OnProgress func(Progress)
	// OnError receives the errors the engine survives (a failed offset
	// commit, a consumer-group error). If nil they are logged.
	OnError func(error)
}

// Validate reports every problem of the configuration at once (an unknown
// trigger, a ProcessingTime interval below 1 ms, a negative batch limit or
// poll interval); weir.New runs it for WithMicroBatch.
func (c Config) Validate() error {
	var errs []error
	if err := c.Trigger.validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxRecordsPerBatch < 0 {
		errs = append(errs, fmt.Errorf("microbatch: MaxRecordsPerBatch %d is negative (0: no cap)", c.MaxRecordsPerBatch))
	}
	if c.MaxBytesPerBatch < 0 {
		errs = append(errs, fmt.Errorf("microbatch: MaxBytesPerBatch %d is negative (0: no cap)", c.MaxBytesPerBatch))
	}
	if c.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("microbatch: PollInterval %v is negative (0: 100ms)", c.PollInterval))
	}
	return errors.Join(errs...)
}

// Record is a record written by a sink, as ForEachBatch receives it.
type Record struct {
	Topic     string
	Key       []byte
	Value     []byte
	Timestamp time.Time
	Headers   []processor.Header
}
