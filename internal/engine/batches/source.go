package batches

import (
	"context"
	"sync"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/offsets"
)

// source is one claimed partition as the batch loop sees it. The claim
// makes the partition this instance's and commits its offsets; the batch
// loop reads the planned ranges itself, exactly, with tasks.ReadRange —
// a range ends at its planned offset even when its last offsets hold only
// transaction markers or aborted records, which a consumer never delivers.
type source struct {
	tp   offsets.TopicPartition
	c    kafka.Claim
	task *tasks.Task
	// arrived is the engine's: signalled for every record the claim's
	// consumer delivers (Engine.idle).
	arrived chan<- struct{}

	// next is the next offset to process; only the batch loop touches it
	// (and, while a batch reads its ranges, the goroutine of its task).
	next int64

	mu     sync.Mutex
	closed bool // the claim's Records ended: revoked or stopping
	// released is closed by the batch loop once the source's last batch
	// is committed; the claim may then return.
	released chan struct{}
}

func newSource(c kafka.Claim, task *tasks.Task, arrived chan<- struct{}) *source {
	return &source{
		tp: offsets.TopicPartition{Topic: c.Topic(), Partition: c.Partition()},
		c:  c, task: task, arrived: arrived, next: c.InitialOffset(),
		released: make(chan struct{}),
	}
}

// hold keeps the claim until it ends, ctx is done or the source is
// released. The records the claim's consumer fetches are not used (the
// batches read their ranges themselves), only drained, so that the claim's
// end is seen, and each one wakes an idle batch loop (arrived). It runs on
// the claim goroutine.
func (s *source) hold(ctx context.Context) {
	defer s.markClosed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.released:
			return
		case _, open := <-s.c.Records():
			if !open {
				return
			}
			select {
			case s.arrived <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
}

func (s *source) markClosed() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// isClosed reports whether the claim ended.
func (s *source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// release lets the claim return.
func (s *source) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.released:
	default:
		close(s.released)
	}
	s.closed = true
}
