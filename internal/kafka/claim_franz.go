package kafka

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// franzClaim implements Claim on franz-go: a partition's records, handed
// over by the poller (push) to a queue, which the claim's feeder empties
// into Records.
type franzClaim struct {
	claimBase
	run    *franzRun
	hwm    atomic.Int64
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   [][]*kgo.Record
	paused  bool // the partition's fetching is paused (see push)
	stopped bool // Records is closing: revoked, lost, stopping, or restarting
	timer   *time.Timer

	// membership is the group membership the claim is held under
	// (membership_franz.go): Session's answers are its, not kgo's live
	// state once the member lost the claim.
	membership claimMembership

	wake chan struct{} // a batch was queued
	halt chan struct{} // closed by stop
	done chan struct{} // closed once the handler returned and the feeder ended
}

var _ Claim = (*franzClaim)(nil)

// HighWaterMarkOffset implements Claim.
func (c *franzClaim) HighWaterMarkOffset() int64 { return c.hwm.Load() }

// Commit implements Session.
func (c *franzClaim) Commit(ctx context.Context) error {
	return c.run.committer.commit(ctx, c.run.tryCommit)
}

// GenerationID implements Session: the member's live generation while it
// still holds the claim's membership (claimMembership).
func (c *franzClaim) GenerationID() int32 {
	_, gen := c.membership.membership(c.run.cl.GroupMetadata())
	return gen
}

// MemberID implements Session: the member's live id while it still holds
// the claim's membership (claimMembership).
func (c *franzClaim) MemberID() string {
	id, _ := c.membership.membership(c.run.cl.GroupMetadata())
	return id
}

// GroupMetadata implements Session: the member's live metadata while it
// still holds the claim's membership, else the membership the claim was
// held under, which the broker fences (claimMembership).
func (c *franzClaim) GroupMetadata() GroupMetadata {
	return c.m.groupMetadata(c.membership.membership(c.run.cl.GroupMetadata()))
}

// push queues a fetch's records of the partition (called by the poller,
// never blocking). When the claim's channel is full, the partition is
// paused: kgo then fetches it no more, and strips it from fetches already
// buffered without moving its position, so nothing is lost; the feeder
// resumes it once the queue is empty. A claim holds at most its channel
// and about two fetches of its partition.
func (c *franzClaim) push(recs []*kgo.Record, hwm int64) {
	c.hwm.Store(hwm)
	if len(recs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.queue = append(c.queue, recs)
	if !c.paused && len(c.records) == cap(c.records) {
		c.paused = true
		c.run.cl.PauseFetchPartitions(map[string][]int32{c.topic: {c.partition}})
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// resumeLocked resumes the partition if push paused it. Pause and resume
// happen under c.mu, so that they reach kgo in the order decided.
func (c *franzClaim) resumeLocked() {
	if c.paused {
		c.paused = false
		c.run.cl.ResumeFetchPartitions(map[string][]int32{c.topic: {c.partition}})
	}
}

// feed moves queued records to Records until the claim is stopped, then
// closes Records.
func (c *franzClaim) feed() {
	defer close(c.records)
	for {
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			return
		}
		if len(c.queue) == 0 {
			c.resumeLocked()
			c.mu.Unlock()
			select {
			case <-c.wake:
				continue
			case <-c.halt:
				return
			}
		}
		batch := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.mu.Unlock()
		for _, kr := range batch {
			if !deliver(c.records, recordFromKgo(kr), c.halt) {
				return
			}
		}
	}
}

// stop closes Records (queued records are dropped: the next claim of the
// partition reads them again from the committed offset) and, if the
// handler has not returned within the rebalance timeout, cancels its
// context. It is idempotent.
func (c *franzClaim) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	c.queue = nil
	c.resumeLocked()
	close(c.halt)
	c.timer = time.AfterFunc(c.run.cfg.RebalanceTimeout, c.cancel)
}

// wasStopped reports whether stop was called.
func (c *franzClaim) wasStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

// headers converts kgo's headers without copying them: kgo.RecordHeader
// and Header have the same fields (the conversion below fails to compile
// otherwise), so a slice of one is a slice of the other.
func headers(hs []kgo.RecordHeader) []Header {
	if len(hs) == 0 {
		return nil
	}
	return unsafe.Slice((*Header)(unsafe.Pointer(unsafe.SliceData(hs))), len(hs))
}

var _ = Header(kgo.RecordHeader{}) // same underlying struct: see headers

// recordFromKgo converts a record kgo fetched (for a claim) or decoded
// (for ReadRange), sharing its bytes and headers.
func recordFromKgo(r *kgo.Record) Record {
	return Record{
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
		Key:       r.Key,
		Value:     r.Value,
		Headers:   headers(r.Headers),
		Timestamp: r.Timestamp,
	}
}

// onAssigned is kgo's OnPartitionsAssigned: the new partitions' claims
// start, at their committed offsets. It runs with the poller blocked.
//
// A claim granted under another member id than kgo's now is a lost
// membership's (kgo joined again under a new member id without calling
// onLost: its JoinGroup was refused UNKNOWN_MEMBER_ID) and keeps
// partitions kgo still counts as its own: it ends here (endStale), before
// any claim of the new membership starts — so that no epoch commits its
// stale positions with a new claim's session — and starts again under
// the new membership, at the committed offsets.
func (fr *franzRun) onAssigned(_ context.Context, cl *kgo.Client, added map[string][]int32) {
	id, gen := cl.GroupMetadata()
	fr.endStale(id)
	if fr.cfg.OnAssignment != nil {
		fr.cfg.OnAssignment(gen)
	}
	var tps []topicPartition
	fr.mu.Lock()
	fr.assignedID, fr.assignedGen = id, gen
	for t, ps := range added {
		for _, p := range ps {
			tp := topicPartition{t, p}
			fr.assigned[tp] = true
			tps = append(tps, tp)
		}
	}
	fr.mu.Unlock()
	fr.log.Debug("kafka: partitions assigned", "group", fr.cfg.GroupID, "partitions", len(tps))
	fr.startClaims(tps)
}

// endStale ends the claims granted under another member id than id (see
// onAssigned): they lose their membership — a commit of their work is
// fenced — and the partitions still assigned start again (wantStart).
func (fr *franzRun) endStale(id string) {
	var stale []*franzClaim
	fr.mu.Lock()
	for _, c := range fr.claims {
		if c.membership.staleFor(id) {
			stale = append(stale, c)
		}
	}
	fr.mu.Unlock()
	if len(stale) == 0 {
		return
	}
	fr.log.Info("kafka: ending the claims of a lost membership", "group", fr.cfg.GroupID, "claims", len(stale))
	stopClaims(stale)
	fr.wantStart()
}

// onRevoked is kgo's OnPartitionsRevoked (at a rebalance, or for every
// partition when the member leaves): the claims' Records close, and it
// returns once their handlers returned — after their last commits, within
// the rebalance timeout, or when they gave up on their cancelled context.
// kgo keeps heartbeating meanwhile and rejoins after.
func (fr *franzRun) onRevoked(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	fr.release(lost)
}

// onLost is kgo's OnPartitionsLost: the member is out of the group (its
// commits fail with MemberGone). The claims end as on a revocation, and
// keep the membership they were lost in (kgo's, before it joins again):
// a commit of their work made after the rejoin is fenced.
func (fr *franzRun) onLost(_ context.Context, cl *kgo.Client, lost map[string][]int32) {
	id, gen := cl.GroupMetadata()
	fr.mu.Lock()
	for _, c := range fr.claims {
		c.membership.lose(id, gen)
	}
	fr.mu.Unlock()
	fr.release(lost)
}

// release stops the claims of the partitions and waits for them.
func (fr *franzRun) release(parts map[string][]int32) {
	var ended []*franzClaim
	fr.mu.Lock()
	for t, ps := range parts {
		for _, p := range ps {
			tp := topicPartition{t, p}
			delete(fr.assigned, tp)
			if c := fr.claims[tp]; c != nil {
				ended = append(ended, c)
			}
		}
	}
	fr.mu.Unlock()
	stopClaims(ended)
}

// stopAll stops every claim and waits for them.
func (fr *franzRun) stopAll() {
	fr.mu.Lock()
	all := slices.Collect(maps.Values(fr.claims))
	fr.mu.Unlock()
	stopClaims(all)
}

// stopClaims stops the claims, all at once, and waits until their
// handlers returned.
func stopClaims(claims []*franzClaim) {
	for _, c := range claims {
		c.stop()
	}
	for _, c := range claims {
		<-c.done
	}
}

// startClaims starts a claim for each partition, at the group's committed
// offset (or the log start). The poller is blocked (a callback, or the
// poller itself), so the offset set here is where the partition's next
// fetch starts. A failed start is reported, and retried by the poller.
func (fr *franzRun) startClaims(tps []topicPartition) {
	if len(tps) == 0 || fr.stopping() {
		return
	}
	// Rebalances wait meanwhile: half the rebalance timeout at most, then
	// the poller tries again.
	ctx, cancel := context.WithTimeout(fr.hardCtx, min(retryBudget, fr.cfg.RebalanceTimeout/2))
	defer cancel()
	initial, hwm, err := fr.startOffsets(ctx, tps)
	if err != nil {
		fr.report(fmt.Errorf("kafka: group %q: starting claims: %w", fr.cfg.GroupID, err))
		fr.wantStart()
		return
	}
	set := make(map[string]map[int32]kgo.EpochOffset)
	for _, tp := range tps {
		if set[tp.topic] == nil {
			set[tp.topic] = make(map[int32]kgo.EpochOffset)
		}
		set[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: initial[tp]}
	}
	fr.cl.SetOffsets(set)
	for _, tp := range tps {
		fr.startClaim(tp, initial[tp], hwm[tp])
	}
}

// wantStart has the poller start missing claims soon: at once the first
// time, then after a backoff if starts keep failing or sessions keep
// ending at once (as the sarama group paces its rejoins).
func (fr *franzRun) wantStart() {
	fr.mu.Lock()
	if time.Since(fr.lastRestart) < time.Second {
		fr.quick++
	} else {
		fr.quick = 0
	}
	fr.lastRestart = time.Now()
	wait := time.Duration(0)
	if fr.quick > 0 {
		wait = Backoff(fr.quick + 2)
	}
	fr.mu.Unlock()
	fr.claimsWG.Go(func() {
		select {
		case <-time.After(wait):
		case <-fr.done:
			return
		}
		fr.startWanted.Store(true)
		fr.wakePoller()
	})
}

// startMissing starts a claim for every assigned partition without one.
// The poller calls it with rebalances blocked.
func (fr *franzRun) startMissing() {
	var tps []topicPartition
	fr.mu.Lock()
	for tp := range fr.assigned {
		if fr.claims[tp] == nil {
			tps = append(tps, tp)
		}
	}
	fr.mu.Unlock()
	fr.startClaims(tps)
}

// startClaim runs the handler on a new claim of tp.
func (fr *franzRun) startClaim(tp topicPartition, initial, hwm int64) {
	ctx, cancel := context.WithCancel(fr.hardCtx)
	c := &franzClaim{
		claimBase: newClaimBase(fr.member, tp, initial), run: fr,
		ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), halt: make(chan struct{}), done: make(chan struct{}),
	}
	c.hwm.Store(hwm)
	fr.mu.Lock()
	c.membership.start(fr.assignedID, fr.assignedGen)
	fr.claims[tp] = c
	fr.mu.Unlock()
	fr.committer.claimStarted(tp)
	fr.claimsWG.Go(func() {
		var feeder sync.WaitGroup
		feeder.Go(c.feed)
		err := fr.call(ctx, c)
		early := !c.wasStopped()
		c.stop()
		feeder.Wait()
		c.mu.Lock()
		c.timer.Stop()
		c.mu.Unlock()
		cancel()
		fr.committer.claimEnded(tp)
		fr.mu.Lock()
		if fr.claims[tp] == c {
			delete(fr.claims, tp)
		}
		fr.mu.Unlock()
		close(c.done)
		switch {
		case err != nil:
			fr.fail(&PartitionError{Topic: tp.topic, Partition: tp.partition, Err: err})
		case early && !fr.stopping():
			fr.endSession()
		}
	})
}

// endSession ends the member's session after a claim returned before its
// Records closed, as the Handler contract says: every claim's Records
// close, the member rejoins its group (ForceRebalance), and the claims of
// every assigned partition start again at the committed offsets. As on
// sarama, whose member ends its session and joins again, a leader's rejoin
// starts a new generation: a handler that returned because its generation
// was fenced — an external sink claimed with a newer token — meets the new
// one when its claim starts again (the new generation's claims replace it
// when the rebalance completes). A member that is not the leader gets its
// current assignment back, as on sarama.
func (fr *franzRun) endSession() {
	fr.mu.Lock()
	if fr.restarting {
		fr.mu.Unlock()
		return
	}
	fr.restarting = true
	fr.mu.Unlock()
	fr.claimsWG.Go(func() {
		fr.stopAll()
		fr.cl.ForceRebalance()
		fr.mu.Lock()
		fr.restarting = false
		fr.mu.Unlock()
		fr.wantStart()
	})
}
