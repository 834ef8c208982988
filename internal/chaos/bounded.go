package chaos

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A micro-batch scenario ends with a bounded phase: once the events are
// over its members stop, the last tenth of the input arrives with nobody
// running, and three instances of the AvailableNow trigger process the
// backlog and exit by themselves — one of them killed on the way and
// started again, at a moment drawn from the seed. The verifier then
// checks the whole output as in any scenario: a bounded run must end with
// every input processed (the group's committed offsets at the input's
// end) and every aggregate right. AvailableNow once ended with a
// repartition stage's records left over, on its own (exactly-once on
// Kafka) and between instances.

// stopMembers stops every member still running, gracefully.
func (s *scenario) stopMembers() error {
	var errs []error
	for _, m := range s.members {
		if m.running() {
			errs = append(errs, m.p.stop(60*time.Second))
		}
	}
	s.logf("members stopped; the rest of the input waits for AvailableNow")
	return errors.Join(errs...)
}

// drainBounded runs the bounded phase: AvailableNow members until each
// has exited by itself, for at most Converge.
func (s *scenario) drainBounded(ctx context.Context, v *verifier) error {
	end, committed, err := v.inputProgress(ctx)
	if err != nil {
		return err
	}
	var left int64
	for p, e := range end {
		left += e - max(committed[p], 0)
	}
	s.logf("AvailableNow: %d input offsets left to process", left)
	s.availableNow = true
	for _, m := range s.members {
		if err := s.startMember(m); err != nil {
			return err
		}
	}
	victim := s.members[s.rng.IntN(len(s.members))]
	kill := time.NewTimer(200*time.Millisecond + time.Duration(s.rng.Int64N(int64(2*time.Second))))
	defer kill.Stop()
	deadline := time.NewTimer(s.cfg.Converge)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("chaos: AvailableNow members still running after %v", s.cfg.Converge)
		case <-kill.C:
			if victim.running() {
				s.logf("AvailableNow: kill %s and start it again", victim.name)
				s.res.Kills++
				if err := victim.p.kill(); err != nil {
					return err
				}
				if err := s.startMember(victim); err != nil {
					return err
				}
			}
		case <-tick.C:
		}
		running := 0
		for _, m := range s.members {
			switch {
			case m.running():
				running++
			case m.p.err != nil:
				return fmt.Errorf("chaos: AvailableNow member %s failed: %w (%s)", m.name, m.p.err, m.p.lastWords())
			}
		}
		if running == 0 {
			s.logf("AvailableNow: every member exited by itself")
			return nil
		}
	}
}
