package chaos

import (
	"context"
	"fmt"
	"time"
)

// The network faults (Config.NetFaults), each event one of them drawn from
// the seed. They happen on the loopback routes of the instances' proxies
// (netproxy.go); the runner's own producer and the verifier reach the
// brokers directly.
var netFaultKinds = []string{netUnreachable, netDegraded}

const (
	// netUnreachable cuts one broker off from one instance only, for 4 to
	// 10 s: past the session timeout as often as not, so that the group
	// sometimes rebalances the instance away (on a single broker, it is
	// cut off from the cluster), while the others go on.
	netUnreachable = "broker unreachable from one instance"
	// netDegraded adds 20 to 200 ms of delay and 1 to 5 % loss to one
	// broker's port, for every instance, for 5 to 10 s.
	netDegraded = "delay and loss on one broker's port"
)

// netFault runs one network fault of the given kind.
func (s *scenario) netFault(ctx context.Context, kind string) error {
	switch kind {
	case netUnreachable:
		m := s.pick()
		if m == nil || m.proxy == nil {
			return nil
		}
		brokers := m.proxy.Brokers()
		b := brokers[s.rng.IntN(len(brokers))]
		d := 4*time.Second + time.Duration(s.rng.Int64N(int64(6*time.Second)))
		if err := m.proxy.Cut(b); err != nil {
			return err
		}
		s.res.NetFaults++
		s.logf("network fault: broker %s unreachable from %s for %v", b, m.name, d.Round(100*time.Millisecond))
		err := s.sleep(ctx, d)
		m.proxy.Heal(b)
		s.logf("network fault: %s reaches %s again", m.name, b)
		return err
	case netDegraded:
		var brokers []string
		for _, m := range s.members {
			if m.proxy != nil {
				brokers = m.proxy.Brokers()
				break
			}
		}
		if len(brokers) == 0 {
			return nil
		}
		b := brokers[s.rng.IntN(len(brokers))]
		delay := 20*time.Millisecond + time.Duration(s.rng.Int64N(int64(180*time.Millisecond)))
		loss := 0.01 + 0.04*s.rng.Float64()
		d := 5*time.Second + time.Duration(s.rng.Int64N(int64(5*time.Second)))
		for _, m := range s.members {
			if err := m.proxy.Degrade(b, delay, loss); err != nil {
				return err
			}
		}
		s.res.NetFaults++
		s.logf("network fault: %v delay and %.1f%% loss on broker %s's port for %v", delay.Round(time.Millisecond), loss*100, b, d.Round(100*time.Millisecond))
		err := s.sleep(ctx, d)
		for _, m := range s.members {
			_ = m.proxy.Degrade(b, 0, 0)
		}
		s.logf("network fault: broker %s's port clean again", b)
		return err
	}
	return fmt.Errorf("chaos: unknown network fault %q", kind)
}

// startProxies gives every member its proxy (scenarios with network
// faults only).
func (s *scenario) startProxies() error {
	for _, m := range s.members {
		p, err := newNetProxy(m.name, s.cfg.Brokers, s.cfg.Seed+uint64(m.slot))
		if err != nil {
			return err
		}
		m.proxy = p
	}
	return nil
}

// closeProxies closes the members' proxies and reports any broker answer
// a proxy could not rewrite (the instance may then have dialed the broker
// past it, out of the faults' reach).
func (s *scenario) closeProxies() {
	for _, m := range s.members {
		if m.proxy == nil {
			continue
		}
		m.proxy.Close()
		if n := m.proxy.Unparsed.Load(); n > 0 {
			s.res.Problems = append(s.res.Problems, fmt.Sprintf("chaos: %s's proxy could not rewrite %d broker answers", m.name, n))
		}
	}
}
