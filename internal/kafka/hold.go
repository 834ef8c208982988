package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// The at-least-once Producer's adaptive linger. Without a linger sarama
// sends a request as soon as the previous one to the broker is answered:
// no latency is added, but under load the requests are small and many,
// and on a small machine the broker's work per request costs throughput
// (a 5 ms linger raised a stateless application's throughput by 5–20 %
// on Kafka 4.4, 2 cores). A fixed linger costs every record its wait,
// even at a trickle (on the embedded broker it doubled the p99 of 5,000
// records a second). So the Producer lingers only while it is loaded: once
// it has been given holdLoadedSends records within holdWindow, it holds
// what it is given and hands it to sarama every holdWindow; a window with
// fewer sends ends the holding.
const (
	// holdWindow is the longest a record is held: Kafka 4's linger.ms.
	holdWindow = 5 * time.Millisecond
	// holdLoadedSends in one holdWindow (20,000 records a second) start
	// the holding; fewer in a window end it. A latency-sensitive load
	// below that rate is never held.
	holdLoadedSends = 100
	// holdMaxRecords held are handed over at once, without waiting for
	// the window to end: a bound on the memory held.
	holdMaxRecords = 8192
)

// hold is the Producer's adaptive linger (see holdWindow). Its mutex orders
// the records of one caller: a record is handed to sarama directly only
// when none is held, and held records are handed over under the mutex.
type hold struct {
	mu    sync.Mutex
	on    bool                      // holding: the last window was loaded
	held  []*sarama.ProducerMessage // records given, not yet handed over
	sends int                       // records given since since
	since time.Time                 // start of the current window
	timer *time.Timer               // ends the window while records are held
	tick  func()                    // the timer's: Producer.tick
}

// add takes msg. It reports whether msg is held; if not, the caller hands
// it to sarama itself. now is read only at a window's start and every
// holdLoadedSends records.
func (h *hold) add(msg *sarama.ProducerMessage) (held bool) {
	h.sends++
	if !h.on {
		if h.sends >= holdLoadedSends {
			now := time.Now()
			h.on = now.Sub(h.since) <= holdWindow
			h.sends, h.since = 0, now
		}
		if !h.on && len(h.held) == 0 {
			return false
		}
	}
	if len(h.held) == 0 && h.on {
		// The first record of a window. A pause since the last window
		// ended the load: send at once, as when not holding.
		if now := time.Now(); now.Sub(h.since) > 2*holdWindow {
			h.on = false
			h.sends, h.since = 1, now
			return false
		}
		if h.timer == nil {
			h.timer = time.AfterFunc(holdWindow, h.tick)
		} else {
			h.timer.Reset(holdWindow)
		}
	}
	h.held = append(h.held, msg)
	return true
}

// endWindow starts the next window: holding goes on if this one was
// loaded. The caller hands over what was held.
func (h *hold) endWindow() {
	h.on = h.sends >= holdLoadedSends
	h.sends, h.since = 0, time.Now()
}

// hand gives p's held records to sarama, in order, until one would block
// past ctx or p's closing; those not handed over stay held, first. The
// caller holds h.mu and p.mu (read) with p open.
func (p *Producer) hand(ctx context.Context) error {
	h := p.hold
	for i, m := range h.held {
		if err := p.input(ctx, m); err != nil {
			n := copy(h.held, h.held[i:])
			clear(h.held[n:])
			h.held = h.held[:n]
			return err
		}
	}
	clear(h.held)
	h.held = h.held[:0]
	return nil
}

// input hands m to sarama, blocking while its input buffer is full until
// ctx is done or p is closing.
func (p *Producer) input(ctx context.Context, m *sarama.ProducerMessage) error {
	select { // fast path: room in sarama's input buffer
	case p.ap.Input() <- m:
		return nil
	default:
	}
	select {
	case p.ap.Input() <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-p.closing:
		return ErrClosed
	}
}

// tick ends a window of the hold: it hands over what is held.
func (p *Producer) tick() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed { // Close handed everything over
		return
	}
	h := p.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	h.endWindow()
	// An error means p is closing: Close hands the rest over.
	_ = p.hand(context.Background())
}

// handHeld hands over what is held (Flush), without waiting for
// the window to end. The caller holds p.mu (read or write) with p open.
func (p *Producer) handHeld(ctx context.Context) error {
	if p.hold == nil {
		return nil
	}
	p.hold.mu.Lock()
	defer p.hold.mu.Unlock()
	return p.hand(ctx)
}

// handHeldAtClose hands over what is held, waiting for room in sarama's
// input however long it takes (sarama drains it until AsyncClose), and
// stops the window's timer. The caller holds p.mu with p closed: no record
// is given, and no window ends, after it.
func (p *Producer) handHeldAtClose() {
	h := p.hold
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer != nil {
		h.timer.Stop()
	}
	for _, m := range h.held {
		p.ap.Input() <- m
	}
	h.held = nil
}
