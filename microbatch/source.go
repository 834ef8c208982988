package microbatch

import (
	"context"
	"sync"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/offsets"
)

// source is one claimed partition as the batch loop sees it: the records
// its claim fetched, queued until a batch takes them. The claim goroutine
// pushes; the batch loop pops. The queue is bounded, so a claim does not
// fetch far ahead of the batches.
type source struct {
	tp   offsets.TopicPartition
	c    kafka.Claim
	task *runtime.Task

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []kafka.Record
	closed bool // the claim's Records ended: revoked or stopping
	limit  int

	// next is the next offset to process; only the batch loop touches it.
	next int64
	// released is closed by the batch loop once the source's last batch
	// is committed; the claim may then return.
	released chan struct{}
}

func newSource(c kafka.Claim, task *runtime.Task, limit int) *source {
	s := &source{
		tp: offsets.TopicPartition{Topic: c.Topic(), Partition: c.Partition()},
		c:  c, task: task, limit: limit, next: c.InitialOffset(),
		released: make(chan struct{}),
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// fill copies the claim's records into the queue until the claim ends, ctx
// is done or the source is released. It runs on the claim goroutine.
func (s *source) fill(ctx context.Context) {
	defer s.markClosed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.released:
			return
		case rec, open := <-s.c.Records():
			if !open {
				return
			}
			s.mu.Lock()
			for len(s.queue) >= s.limit && !s.closed {
				s.cond.Wait()
			}
			if s.closed {
				s.mu.Unlock()
				return
			}
			s.queue = append(s.queue, rec)
			s.cond.Broadcast()
			s.mu.Unlock()
		}
	}
}

// markClosed records that no more records come and wakes waiters.
func (s *source) markClosed() {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// isClosed reports whether the claim ended.
func (s *source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// take returns the next queued record with an offset below end, waiting for
// one. It returns false when the range is done (a record at or past end is
// queued, or the offset end-1 was taken) or the claim ended first.
// Records below s.next (already processed) are skipped.
func (s *source) take(end int64) (kafka.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for len(s.queue) > 0 && s.queue[0].Offset < s.next {
			s.queue = s.queue[1:]
		}
		if len(s.queue) > 0 {
			rec := s.queue[0]
			if rec.Offset >= end {
				return kafka.Record{}, false
			}
			s.queue = s.queue[1:]
			s.cond.Broadcast()
			return rec, true
		}
		if s.closed {
			return kafka.Record{}, false
		}
		s.cond.Wait()
	}
}

// release lets the claim return (and stops its fill).
func (s *source) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.released:
	default:
		close(s.released)
	}
	s.closed = true
	s.cond.Broadcast()
}
