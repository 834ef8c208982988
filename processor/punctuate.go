package processor

import (
	"errors"
	"fmt"
	"time"
)

// schedule holds a task's punctuators in registration order.
type schedule struct {
	entries []*punctuation
}

type punctuation struct {
	ctx       *nodeContext
	typ       PunctuationType
	interval  int64 // ms
	next      int64 // ms
	fn        Punctuator
	cancelled bool
}

// Cancel stops the punctuator; it never fires again.
func (p *punctuation) Cancel() { p.cancelled = true }

// add registers a punctuator. Stream-time punctuators are anchored at time 0,
// like Kafka Streams': the first record fires them, then they fire each time
// stream time has advanced by interval. Wall-clock punctuators fire first one
// interval after the task's current wall-clock time.
func (s *schedule) add(t *Task, c *nodeContext, interval time.Duration, typ PunctuationType, fn Punctuator) (Cancellable, error) {
	ms := interval.Milliseconds()
	if ms < 1 {
		return nil, fmt.Errorf("processor: punctuation interval %v is below 1ms", interval)
	}
	if fn == nil {
		return nil, errors.New("processor: nil punctuator")
	}
	p := &punctuation{ctx: c, typ: typ, interval: ms, fn: fn}
	switch typ {
	case StreamTime:
		p.next = 0
	case WallClockTime:
		p.next = t.wall + ms
	default:
		return nil, fmt.Errorf("processor: unknown punctuation type %d", int(typ))
	}
	s.entries = append(s.entries, p)
	return p, nil
}

// punctuate fires, once each, the punctuators of typ that are due at now.
// A punctuator that fell several intervals behind fires once and is
// rescheduled one interval after now. It runs after every record, so it does
// not allocate unless a punctuator was cancelled.
func (t *Task) punctuate(typ PunctuationType, now int64) error {
	if now < 0 {
		return nil
	}
	var errs []error
	// Punctuators may schedule new ones; those wait for the next round.
	n := len(t.sched.entries)
	cancelled := false
	for i := 0; i < n; i++ {
		p := t.sched.entries[i]
		if p.cancelled {
			cancelled = true
			continue
		}
		if p.typ != typ || p.next > now {
			continue
		}
		if err := t.guard(func() error { return p.fn(time.UnixMilli(now)) }); err != nil {
			errs = append(errs, fmt.Errorf("processor: punctuator of %q at %d: %w", p.ctx.node.def.Name, now, err))
		}
		p.next += p.interval
		if p.next <= now {
			p.next = now + p.interval
		}
	}
	if cancelled {
		live := make([]*punctuation, 0, len(t.sched.entries))
		for _, p := range t.sched.entries {
			if !p.cancelled {
				live = append(live, p)
			}
		}
		t.sched.entries = live
	}
	return errors.Join(errs...)
}
