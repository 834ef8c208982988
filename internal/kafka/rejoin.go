package kafka

import (
	"context"
	"sync"
	"time"
)

// rejoinGate orders a member's commits and its rejoins, as the Java
// consumer's single poll thread does for Kafka Streams: a transactional
// offset commit (KIP-447) carries the member's generation, and the broker
// refuses it (ILLEGAL_GENERATION) once the group completed a join to the
// next one. Under the cooperative protocol a member keeps processing
// while the group rebalances, so without the gate an epoch whose commit
// read generation N before the member's own JoinGroup, and reached the
// coordinator after the join completed, was refused — and the engine
// rewound every task, the kept ones too, at every rebalance.
//
// Invariant: the member sends no JoinGroup while a commit that holds the
// gate is in flight (it waits for it, at most closeWait), and no commit
// takes the gate — reads the member's generation — from then until the
// member holds its next generation (its assignment arrived), it lost its
// membership, or openWait passed. A join cannot complete without the
// member's JoinGroup (the coordinator waits for every member up to the
// rebalance timeout), so a commit that held the gate carries a
// generation that is still the group's when the coordinator checks it.
//
// The gate never chooses the generation a commit carries: it is the
// claim's, read once the gate is passed — the member's live one while the
// claim's membership lasts, else the one it was lost in (franz-go's
// claimMembership; a sarama session ends with its membership) — and the
// broker still fences a commit whose generation is over (a member removed
// for its session timeout while its commit was parked, one whose wait ran
// out): a parked commit never goes out under the membership the member
// joined next. It changes when the
// member rejoins and when a commit reads its generation, never what the
// broker accepts, so exactly-once keeps resting on KIP-447's fencing
// alone; only the member's fencing of itself is gone.
type rejoinGate struct {
	mu      sync.Mutex
	closed  bool
	opened  chan struct{} // closed when the gate opens; a new one at each close
	holders int           // commits in flight that hold the gate
	drained chan struct{} // closed when holders reaches 0 while the gate closes
	gen     int32         // the generation the last opening announced; -1 if none
	down    bool          // Run is stopping: the gate stays open

	closeWait time.Duration
	openWait  time.Duration
}

// newRejoinGate returns an open gate: a rejoin waits at most closeWait
// for the commits in flight, a commit at most openWait for the member's
// next generation.
func newRejoinGate(closeWait, openWait time.Duration) *rejoinGate {
	g := &rejoinGate{opened: make(chan struct{}), gen: -1, closeWait: closeWait, openWait: openWait}
	close(g.opened)
	return g
}

// hold waits while the gate is closed — until it opens, ctx ends or
// openWait passed, after which the caller goes on regardless (its commit
// is then fenced by the broker if its generation is over) — and holds
// the gate until release is called. It returns the generation the last
// opening announced (-1 if none).
func (g *rejoinGate) hold(ctx context.Context) (gen int32, release func()) {
	g.mu.Lock()
	if g.closed && !g.down {
		opened := g.opened
		g.mu.Unlock()
		t := time.NewTimer(g.openWait)
		select {
		case <-opened:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		g.mu.Lock()
	}
	g.holders++
	gen = g.gen
	g.mu.Unlock()
	var once sync.Once
	return gen, func() { once.Do(g.release) }
}

func (g *rejoinGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holders--
	if g.holders == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
}

// close closes the gate before the member rejoins and waits, at most
// closeWait, for the commits in flight. It reports how long it waited and
// how many commits were still in flight when it stopped waiting.
func (g *rejoinGate) close() (waited time.Duration, pending int) {
	g.mu.Lock()
	if g.down {
		g.mu.Unlock()
		return 0, 0
	}
	if !g.closed {
		g.closed = true
		g.opened = make(chan struct{})
	}
	if g.holders == 0 {
		g.mu.Unlock()
		return 0, 0
	}
	if g.drained == nil {
		g.drained = make(chan struct{})
	}
	drained := g.drained
	g.mu.Unlock()
	start := time.Now()
	t := time.NewTimer(g.closeWait)
	defer t.Stop()
	select {
	case <-drained:
	case <-t.C:
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Since(start), g.holders
}

// open opens the gate: the member holds generation gen (-1: unknown, or
// none — it lost its membership, a claim ended).
func (g *rejoinGate) open(gen int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gen >= 0 {
		g.gen = gen
	}
	if g.closed {
		g.closed = false
		close(g.opened)
	}
}

// shutdown opens the gate for good: Run is stopping, and the claims'
// last commits, and a graceful stop's last epoch, must not wait.
func (g *rejoinGate) shutdown() {
	g.open(-1)
	g.mu.Lock()
	g.down = true
	g.mu.Unlock()
}

// beforeRejoin closes the gate before the member sends a JoinGroup (see
// rejoinGate), logging a wait for commits in flight.
func (m *member) beforeRejoin() {
	waited, pending := m.gate.close()
	switch {
	case pending > 0:
		m.log.Warn("kafka: rejoining with a commit still in flight; the broker may refuse it (ILLEGAL_GENERATION)",
			"group", m.cfg.GroupID, "waited", waited, "pending", pending)
	case waited > 0:
		m.log.Info("kafka: rejoin waited for the commit in flight", "group", m.cfg.GroupID, "waited", waited)
	}
}

// generationHolder is a Claim whose member has a rejoin gate.
type generationHolder interface {
	holdGeneration(ctx context.Context) (GroupMetadata, func())
}

// HoldGeneration returns s's group metadata for a transactional
// offset commit and keeps the member from rejoining its group until
// release is called: call release once the commit (TxnOffsetCommit)
// returned. While the member is rejoining, it first waits until the
// member holds its next generation (bounded by the rebalance timeout, or
// ctx). For a Session not made by this package it is s.GroupMetadata()
// and a release that does nothing.
func HoldGeneration(ctx context.Context, s Session) (gm GroupMetadata, release func()) {
	if h, ok := s.(generationHolder); ok {
		return h.holdGeneration(ctx)
	}
	return s.GroupMetadata(), func() {}
}

// rejoinWaits are the gate's bounds for a member: a rejoin waits for
// commits in flight half the session timeout at most on sarama, whose
// member sends no heartbeat meanwhile (sarama holds its generation lock
// while it joins), half the rebalance timeout on franz-go, which keeps
// heartbeating; a commit waits for the next generation up to the
// rebalance timeout, the longest a join may take.
func rejoinWaits(cfg GroupConfig, heartbeats bool) (closeWait, openWait time.Duration) {
	closeWait = cfg.RebalanceTimeout / 2
	if !heartbeats {
		closeWait = min(closeWait, cfg.SessionTimeout/2)
	}
	return closeWait, cfg.RebalanceTimeout
}

// holdGeneration implements generationHolder for sarama: sarama stores
// the session's new generation a moment after the strategy's
// OnAssignment opened the gate, so a commit waits (briefly) until the
// session shows the generation announced, or the session ended.
func (c *claim) holdGeneration(ctx context.Context) (GroupMetadata, func()) {
	gen, release := c.m.gate.hold(ctx)
	if gen >= 0 && c.sess.GenerationID() < gen {
		deadline := time.Now().Add(sessionCatchUp)
		for c.sess.GenerationID() < gen && time.Now().Before(deadline) &&
			c.sess.Context().Err() == nil && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
	}
	return c.GroupMetadata(), release
}

// sessionCatchUp bounds the wait for a sarama session to show the
// generation its strategy was told of.
const sessionCatchUp = time.Second

// holdGeneration implements generationHolder for franz-go, whose client
// knows its new generation before the assignment's callbacks run.
func (c *franzClaim) holdGeneration(ctx context.Context) (GroupMetadata, func()) {
	_, release := c.m.gate.hold(ctx)
	return c.GroupMetadata(), release
}
