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
// lingers only while it is loaded: once it has been given lingerLoadedSends
// records within lingerWindow, it holds what it is given and hands it to
// sarama every lingerWindow; a window with fewer sends ends the holding.
// Where the producer must deliver at once (a Flush, a commit), it hands
// what is held over without waiting for the window.
const (
	// lingerWindow is the longest a record is held: Kafka 4's linger.ms.
	lingerWindow = 5 * time.Millisecond
	// lingerLoadedSends in one lingerWindow (20,000 records a second) start
	// the holding; fewer in a window end it. A latency-sensitive load
	// below that rate is never held.
	lingerLoadedSends = 100
	// lingerMaxRecords held are handed over at once, without waiting for
	// the window to end: a bound on the memory held.
	lingerMaxRecords = 8192
)

// AdaptiveLinger is a producer's adaptive linger (see lingerWindow): it holds
// the records given to it while they come fast, for its owner to hand to
// sarama in order. A record is sent directly only when none is held and no
// hand-over is running; a hand-over takes the held records out under the lock
// and hands them over outside it, so records given meanwhile are held behind
// them rather than waiting.
//
// The owner gives every record to [AdaptiveLinger.Add] first and sends it
// itself when Add does not hold it; a timer calls the owner's tick every
// window while records are held, and the tick calls [AdaptiveLinger.Tick]. It
// is safe for concurrent use.
type AdaptiveLinger struct {
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

// NewAdaptiveLinger returns an AdaptiveLinger whose windows end by calling
// tick (in a goroutine of its own), which should call [AdaptiveLinger.Tick].
func NewAdaptiveLinger(tick func()) *AdaptiveLinger { return &AdaptiveLinger{tick: tick} }

// Add takes msg and reports whether it holds it; if not, the caller sends msg
// itself. Once lingerMaxRecords are held, Add hands them to send first (see
// [AdaptiveLinger.Hand]); what send does not take stays held. The clock is
// read only at a window's start and every lingerLoadedSends records.
func (l *AdaptiveLinger) Add(msg *sarama.ProducerMessage, send func(*sarama.ProducerMessage) error) (held bool) {
	l.mu.Lock()
	l.sends++
	if !l.on && l.sends >= lingerLoadedSends {
		now := time.Now()
		l.on = now.Sub(l.since) <= lingerWindow
		l.sends, l.since = 0, now
	}
	if len(l.held) == 0 {
		switch {
		case l.busy:
			// A hand-over is sending: msg waits behind its records.
		case !l.on:
			l.mu.Unlock()
			return false
		case time.Since(l.since) > 2*lingerWindow:
			// The first record of a window, after a pause that ended
			// the load: send at once, as when not holding.
			l.on = false
			l.sends, l.since = 1, time.Now()
			l.mu.Unlock()
			return false
		}
		if l.timer == nil {
			l.timer = time.AfterFunc(lingerWindow, l.tick)
		} else {
			l.timer.Reset(lingerWindow)
		}
	}
	l.held = append(l.held, msg)
	full := len(l.held) >= lingerMaxRecords
	l.mu.Unlock()
	if full {
		_ = l.Hand(send)
	}
	return true
}

// Hand gives the held records to send, in order, until send fails; those
// not taken stay held, first, and Hand returns send's error. Records given
// while Hand runs are held behind the ones it hands over.
func (l *AdaptiveLinger) Hand(send func(*sarama.ProducerMessage) error) error {
	l.handing.Lock()
	defer l.handing.Unlock()
	l.mu.Lock()
	batch := l.held
	l.held, l.spare = l.spare, nil
	l.busy = len(batch) > 0
	l.mu.Unlock()
	for i, m := range batch {
		if err := send(m); err != nil {
			l.mu.Lock()
			l.held = slices.Concat(batch[i:], l.held)
			l.busy = false
			l.mu.Unlock()
			return err
		}
	}
	clear(batch)
	l.mu.Lock()
	l.spare = batch[:0]
	l.busy = false
	l.mu.Unlock()
	return nil
}

// Tick ends a window — holding goes on if it was loaded — and hands the
// held records to send, as Hand does.
func (l *AdaptiveLinger) Tick(send func(*sarama.ProducerMessage) error) error {
	l.mu.Lock()
	l.on = l.sends >= lingerLoadedSends
	l.sends, l.since = 0, time.Now()
	l.mu.Unlock()
	return l.Hand(send)
}

// Drop discards the held records (their transaction aborted) and returns
// how many there were. A hand-over running finishes first.
func (l *AdaptiveLinger) Drop() int {
	l.handing.Lock()
	defer l.handing.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.held)
	clear(l.held)
	l.held = l.held[:0]
	return n
}

// Stop stops the window's timer: the owner hands or drops what is held
// itself, and gives no more records.
func (l *AdaptiveLinger) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
}

// State reports whether l is holding (its last window was loaded) and how
// many records it holds.
func (l *AdaptiveLinger) State() (on bool, held int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.on, len(l.held)
}
