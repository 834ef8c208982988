package kafka

import (
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// The producers' adaptive linger. Without a linger sarama sends a request
// as soon as the previous one to the broker is answered: no latency is
// added, but under load the requests are small and many, and on a small
// machine the broker's work per request costs throughput (a 5 ms linger
// raised a stateless application's throughput by 5–20 % on Kafka 4.4, 2
// cores). A fixed linger costs every record its wait, even at a trickle
// (on the embedded broker it doubled the p99 of 5,000 records a second),
// and a commit waits it out too: sarama has no flush. So a producer
// lingers only while it is loaded: once it has been given holdLoadedSends
// records within holdWindow, it holds what it is given and hands it to
// sarama every holdWindow; a window with fewer sends ends the holding.
// Where the producer must deliver at once (a Flush, a commit), it hands
// what is held over without waiting for the window.
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

// Hold is a producer's adaptive linger (see holdWindow): it holds the
// records given to it while they come fast, for its owner to hand to
// sarama in order. A record is sent directly only when none is held and no
// hand-over is running; a hand-over takes the held records out under the
// lock and hands them over outside it, so records given meanwhile are held
// behind them rather than waiting.
//
// The owner gives every record to [Hold.Add] first and sends it itself
// when Add does not hold it; a timer calls the owner's tick every window
// while records are held, and the tick calls [Hold.Tick]. It is safe for
// concurrent use.
type Hold struct {
	// handing serializes hand-overs (and Drop): the records of one are
	// all sent before the next takes its own.
	handing sync.Mutex

	mu    sync.Mutex
	on    bool                      // holding: the last window was loaded
	busy  bool                      // a hand-over is sending records
	held  []*sarama.ProducerMessage // records given, not yet handed over
	spare []*sarama.ProducerMessage // the array of the last hand-over, for reuse
	sends int                       // records given since since
	since time.Time                 // start of the current window
	timer *time.Timer               // ends the window while records are held
	tick  func()                    // the owner's; calls Tick
}

// NewHold returns a Hold whose windows end by calling tick (in a goroutine
// of its own), which should call [Hold.Tick].
func NewHold(tick func()) *Hold { return &Hold{tick: tick} }

// Add takes msg and reports whether it holds it; if not, the caller sends
// msg itself. Once holdMaxRecords are held, Add hands them to send first
// (see [Hold.Hand]); what send does not take stays held. The clock is read
// only at a window's start and every holdLoadedSends records.
func (h *Hold) Add(msg *sarama.ProducerMessage, send func(*sarama.ProducerMessage) error) (held bool) {
	h.mu.Lock()
	h.sends++
	if !h.on && h.sends >= holdLoadedSends {
		now := time.Now()
		h.on = now.Sub(h.since) <= holdWindow
		h.sends, h.since = 0, now
	}
	if len(h.held) == 0 {
		switch {
		case h.busy:
			// A hand-over is sending: msg waits behind its records.
		case !h.on:
			h.mu.Unlock()
			return false
		case time.Since(h.since) > 2*holdWindow:
			// The first record of a window, after a pause that ended
			// the load: send at once, as when not holding.
			h.on = false
			h.sends, h.since = 1, time.Now()
			h.mu.Unlock()
			return false
		}
		if h.timer == nil {
			h.timer = time.AfterFunc(holdWindow, h.tick)
		} else {
			h.timer.Reset(holdWindow)
		}
	}
	h.held = append(h.held, msg)
	full := len(h.held) >= holdMaxRecords
	h.mu.Unlock()
	if full {
		_ = h.Hand(send)
	}
	return true
}

// Hand gives the held records to send, in order, until send fails; those
// not taken stay held, first, and Hand returns send's error. Records given
// while Hand runs are held behind the ones it hands over.
func (h *Hold) Hand(send func(*sarama.ProducerMessage) error) error {
	h.handing.Lock()
	defer h.handing.Unlock()
	h.mu.Lock()
	batch := h.held
	h.held, h.spare = h.spare, nil
	h.busy = len(batch) > 0
	h.mu.Unlock()
	for i, m := range batch {
		if err := send(m); err != nil {
			h.mu.Lock()
			h.held = slices.Concat(batch[i:], h.held)
			h.busy = false
			h.mu.Unlock()
			return err
		}
	}
	clear(batch)
	h.mu.Lock()
	h.spare = batch[:0]
	h.busy = false
	h.mu.Unlock()
	return nil
}

// Tick ends a window — holding goes on if it was loaded — and hands the
// held records to send, as Hand does.
func (h *Hold) Tick(send func(*sarama.ProducerMessage) error) error {
	h.mu.Lock()
	h.on = h.sends >= holdLoadedSends
	h.sends, h.since = 0, time.Now()
	h.mu.Unlock()
	return h.Hand(send)
}

// Drop discards the held records (their transaction aborted) and returns
// how many there were. A hand-over running finishes first.
func (h *Hold) Drop() int {
	h.handing.Lock()
	defer h.handing.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.held)
	clear(h.held)
	h.held = h.held[:0]
	return n
}

// Stop stops the window's timer: the owner hands or drops what is held
// itself, and gives no more records.
func (h *Hold) Stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.timer != nil {
		h.timer.Stop()
	}
}

// State reports whether h is holding (its last window was loaded) and how
// many records it holds.
func (h *Hold) State() (on bool, held int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.on, len(h.held)
}
