package microbatch

import (
	"fmt"
	"time"
)

// Trigger decides when batches run, after Spark Structured Streaming's
// triggers.
type Trigger struct {
	kind     triggerKind
	interval time.Duration
}

type triggerKind int

const (
	asFastAsPossible triggerKind = iota
	processingTime
	once
	availableNow
)

// Continuously runs the next batch as soon as the previous one ends (the
// default trigger). When no input is waiting it waits for the next record
// to reach one of its partitions, planning again at least every
// PollInterval.
func Continuously() Trigger { return Trigger{kind: asFastAsPossible} }

// ProcessingTime starts a batch every interval; a batch that takes longer
// is followed by the next one at once.
func ProcessingTime(interval time.Duration) Trigger {
	return Trigger{kind: processingTime, interval: interval}
}

// Once runs a single batch of what is available, then stops. A stage
// behind a repartition topic processes what that batch wrote to it in the
// next run's batch; AvailableNow drains every stage.
func Once() Trigger { return Trigger{kind: once} }

// AvailableNow processes everything available when the run starts — in as
// many batches as the batch limits need — and then stops: a bounded batch
// job over the same topology. Records that arrive after the start wait for
// the next run. Stages behind repartition topics are drained too. With
// several instances, each ends when the whole group is done: every
// partition of the sources committed up to its end when the run started,
// every repartition partition up to its end, with no transaction open on
// it (under exactly-once, a last batch's records are readable only once
// Kafka has written its markers).
func AvailableNow() Trigger { return Trigger{kind: availableNow} }

// String names the trigger as progress reports show it.
func (t Trigger) String() string {
	switch t.kind {
	case processingTime:
		return "ProcessingTime(" + t.interval.String() + ")"
	case once:
		return "Once"
	case availableNow:
		return "AvailableNow"
	}
	return "Continuously"
}

// Interval returns the interval of a ProcessingTime trigger, and 0 for the
// other triggers. Triggers are comparable: t == Once() tells a Once
// trigger.
func (t Trigger) Interval() time.Duration {
	if t.kind != processingTime {
		return 0
	}
	return t.interval
}

func (t Trigger) validate() error {
	if t.kind == processingTime && t.interval < time.Millisecond {
		return fmt.Errorf("microbatch: processing-time interval %v is below 1ms", t.interval)
	}
	if t.kind < asFastAsPossible || t.kind > availableNow {
		return fmt.Errorf("microbatch: unknown trigger %d", int(t.kind))
	}
	return nil
}
