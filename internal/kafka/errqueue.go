package kafka

import (
	"log/slog"
	"sync"
)

// errorQueue carries errors from the group's goroutines to the user's
// OnError without ever dropping one.
//
// sarama hands errors over a buffered channel with a non-blocking send: if
// the reader falls ChannelBufferSize (256) errors behind, sarama drops the
// rest silently. So the reader of that channel only appends here, which
// never blocks, and a separate goroutine calls OnError, as slowly as it
// likes. The queue is unbounded; errors are rare next to records.
type errorQueue struct {
	fn  func(error)
	log *slog.Logger

	mu     sync.Mutex
	queue  []error
	closed bool
	signal chan struct{} // capacity 1: "the queue may be non-empty"
}

func newErrorQueue(fn func(error), log *slog.Logger) *errorQueue {
	return &errorQueue{fn: fn, log: log, signal: make(chan struct{}, 1)}
}

// push queues err. After close it delivers through the logger instead, so
// that even a straggler is not lost.
func (q *errorQueue) push(err error) {
	if err == nil {
		return
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		q.log.Error("kafka: group error after stop", "err", err)
		return
	}
	q.queue = append(q.queue, err)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// close makes run return once the queue is empty.
func (q *errorQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// run delivers queued errors in order until closed and drained.
func (q *errorQueue) run() {
	for range q.signal {
		for {
			q.mu.Lock()
			batch := q.queue
			q.queue = nil
			closed := q.closed
			q.mu.Unlock()
			if len(batch) == 0 {
				if closed {
					return
				}
				break
			}
			for _, err := range batch {
				q.deliver(err)
			}
		}
	}
}

func (q *errorQueue) deliver(err error) {
	if q.fn == nil {
		q.log.Error("kafka: group error", "err", err)
		return
	}
	q.fn(err)
}
