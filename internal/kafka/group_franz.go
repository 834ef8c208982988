package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// franzRun is one Run of a Group on franz-go (kgo).
//
// kgo manages the membership (join, sync, heartbeats, the cooperative
// protocol with weir's assignor, franzBalancer) and fetches; weir keeps
// the claims. One goroutine polls (poll) and hands each partition's
// records to its claim's queue, never blocking: a claim whose channel is
// full has its partition paused until its feeder drained the queue, so a
// slow claim holds back its own partition only.
//
// The member blocks rebalances while it polls (kgo.BlockRebalanceOnPoll):
// between a PollFetches and AllowRebalance no assignment, revocation or
// loss runs. So records the poller took are handed out before a claim of
// their partition ends or starts, and a fetch that straddles a revocation
// never reaches the next claim of the partition. The callbacks themselves
// (onAssigned, onRevoked, onLost) run with the poller blocked.
type franzRun struct {
	*member
	cl   *kgo.Client
	done <-chan struct{} // Run is stopping

	// pollCancel cancels the poll in progress (see restart).
	pollCancel atomic.Pointer[context.CancelFunc]
	// startWanted asks the poller to start the claims of every assigned
	// partition without one (after a failed start, or a session ended by
	// a claim returning early).
	startWanted atomic.Bool
	// claimsWG counts claim goroutines and session restarts.
	claimsWG sync.WaitGroup

	mu       sync.Mutex
	assigned map[topicPartition]bool
	claims   map[topicPartition]*franzClaim
	// assignedID and assignedGen are the membership of the last
	// assignment (kgo's at onAssigned): the claims of assigned
	// partitions are granted under it, not under kgo's live state, which
	// takes a new member id as soon as a JoinGroup refused
	// UNKNOWN_MEMBER_ID is retried — with the old generation, before the
	// new membership has any assignment (claimMembership).
	assignedID  string
	assignedGen int32
	// restarting is set while a session ended by an early return is
	// being restarted; lastRestart and quick pace restarts.
	restarting  bool
	lastRestart time.Time
	quick       int
}

// runFranz is Run on franz-go.
func (g *Group) runFranz(ctx context.Context, h Handler) error {
	consumeCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	fr := &franzRun{
		member:   newMember(ctx, g.cfg, h, newCommitter(nil, g.cfg.GroupID, g.cfg.InstanceID), stop),
		done:     consumeCtx.Done(),
		assigned: make(map[topicPartition]bool),
		claims:   make(map[topicPartition]*franzClaim),
	}
	opts, err := FranzOpts(g.cfg.Config)
	if err != nil {
		return err
	}
	// Cancelling clientCtx fails every request in flight, a JoinGroup
	// waiting for a rebalance included (see the leave below).
	clientCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	opts = append(opts, kgo.WithContext(clientCtx))
	cl, err := kgo.NewClient(append(opts, fr.groupOpts()...)...)
	if err != nil {
		return fmt.Errorf("%w: group %q: %w", ErrConfig, g.cfg.GroupID, err)
	}
	fr.cl = cl
	var dispatcher sync.WaitGroup
	dispatcher.Go(fr.errs.run)
	defer func() {
		fr.errs.close()
		dispatcher.Wait()
	}()

	// The client joins once it has topics to consume: only after they
	// are known to exist, with matching partition counts.
	if err := checkTopicsFranz(ctx, cl, g.cfg.Topics, g.cfg.CoPartitioned); err != nil {
		cl.Close()
		return err
	}
	cl.AddConsumeTopics(g.cfg.Topics...)

	var poller sync.WaitGroup
	poller.Go(func() { fr.poll(consumeCtx) })
	if probe := g.cfg.Replicas.Probe; probe != nil {
		// A probe (warm-ups caught up) makes the member join again with
		// its new lags in its subscription: kgo rejoins when the join
		// metadata changed (ForceRebalance), and the leader plans anew.
		// Unlike a sarama member, it keeps its claims meanwhile.
		poller.Go(func() {
			for {
				select {
				case <-probe:
					fr.log.Info("weir: probing rebalance: rejoining the group", "group", g.cfg.GroupID)
					cl.ForceRebalance()
				case <-consumeCtx.Done():
					return
				}
			}
		})
	}
	<-consumeCtx.Done()
	poller.Wait()

	// Leaving revokes every partition (onRevoked): the claims' Records
	// close, their handlers commit and return, then the member leaves
	// the group (a static member stays, to come back within the session
	// timeout). kgo lets a join or sync in flight finish first, so that
	// the last commits run in a live generation; leaveCtx bounds the
	// whole leave. A member without partitions has no commit to make,
	// and a JoinGroup can wait the whole rebalance timeout (kfake never
	// answers one whose member it removed meanwhile): its leave gets
	// noClaimsLeave, then its requests are abandoned.
	timeout := g.cfg.RebalanceTimeout + leaveGrace
	fr.mu.Lock()
	if len(fr.assigned) == 0 && len(fr.claims) == 0 {
		timeout = noClaimsLeave
	}
	fr.mu.Unlock()
	leaveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	if err := cl.LeaveGroupContext(leaveCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fr.report(wrapFranzGroupError(g.cfg.GroupID, err))
	}
	cancel()
	abort() // a leave that did not finish in time
	cl.Close()
	fr.stopAll() // claims a restart started after the leave revoked
	fr.claimsWG.Wait()
	return fr.result()
}

// noClaimsLeave bounds the leave of a member without partitions.
const noClaimsLeave = 2 * time.Second

// leaveGrace is how long a leave may take beyond the rebalance timeout
// the revoked claims have.
const leaveGrace = 10 * time.Second

// groupOpts are the kgo options of the member.
func (fr *franzRun) groupOpts() []kgo.Opt {
	cfg := fr.cfg
	opts := []kgo.Opt{
		kgo.ConsumerGroup(cfg.GroupID),
		kgo.Balancers(newFranzBalancer(cfg.CoPartitioned, cfg.MemberData, cfg.Replicas, cfg.logger())),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(cfg.SessionTimeout),
		kgo.HeartbeatInterval(cfg.HeartbeatInterval),
		kgo.RebalanceTimeout(cfg.RebalanceTimeout),
		// kgo's floor for fetch.max.wait.ms is 10 ms.
		kgo.FetchMaxWait(max(cfg.FetchMaxWait, 10*time.Millisecond)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxPartitionBytes(DefaultMaxPartitionFetchBytes),
		kgo.OnPartitionsAssigned(fr.onAssigned),
		kgo.OnPartitionsRevoked(fr.onRevoked),
		kgo.OnPartitionsLost(fr.onLost),
		// Fetch errors kgo retries by itself reach OnError too, as the
		// sarama group's do.
		kgo.KeepRetryableFetchErrors(),
		// tryCommit names topics, not topic ids (OffsetCommit v10+).
		kgo.MaxVersions(commitVersions()),
	}
	opts = append(opts, coordinatorOpts(cfg)...)
	if t := cfg.Tuning; t.MaxPartitionFetchBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(t.MaxPartitionFetchBytes))
	}
	if t := cfg.Tuning; t.FetchMinBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(t.FetchMinBytes))
	}
	if cfg.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if cfg.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(cfg.InstanceID))
	}
	return opts
}

// commitVersions are kgo's default request versions with OffsetCommit
// at most v9: v10 names topics by id only.
func commitVersions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	return v
}

// poll takes fetches and hands them to the claims until ctx is done.
func (fr *franzRun) poll(ctx context.Context) {
	defer fr.cl.AllowRebalance()
	for {
		pctx, cancel := context.WithCancel(ctx)
		fr.pollCancel.Store(&cancel)
		if fr.startWanted.Load() {
			cancel()
		}
		fetches := fr.cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return
		}
		fr.dispatch(fetches)
		// A poll that returned something (a cancelled one returns its
		// error) blocks rebalances until AllowRebalance: claims start
		// here as in onAssigned.
		if len(fetches) > 0 && fr.startWanted.Swap(false) {
			fr.startMissing()
		}
		fr.cl.AllowRebalance()
	}
}

// wakePoller makes the poll in progress return.
func (fr *franzRun) wakePoller() {
	if c := fr.pollCancel.Load(); c != nil {
		(*c)()
	}
}

// dispatch hands records to their claims and errors to OnError.
func (fr *franzRun) dispatch(fetches kgo.Fetches) {
	fetches.EachError(func(topic string, partition int32, err error) {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, kgo.ErrClientClosed):
		case topic == "":
			// Group management errors come as a fetch error of no topic.
			werr := wrapFranzGroupError(fr.cfg.GroupID, err)
			if fatalGroupError(err) {
				fr.fail(werr)
				return
			}
			fr.report(werr)
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			// Refused again at every retry: the member would hold its
			// partitions and process nothing.
			fr.fail(&PartitionError{Topic: topic, Partition: partition,
				Err: fmt.Errorf("not authorized to read it: %w (an ACL granting Read on topic %q is needed)", err, topic)})
		default:
			fr.report(&PartitionError{Topic: topic, Partition: partition, Err: err})
		}
	})
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		if p.Err != nil && len(p.Records) == 0 {
			return // reported above; its high watermark is not one
		}
		fr.mu.Lock()
		c := fr.claims[topicPartition{p.Topic, p.Partition}]
		fr.mu.Unlock()
		if c == nil {
			// No claim: its start failed or its session is restarting,
			// and the start sets the partition's offset anew. (A
			// revoked partition's fetches are dropped by kgo itself.)
			return
		}
		c.push(p.Records, p.HighWatermark)
	})
}

// stopping reports whether Run is stopping.
func (fr *franzRun) stopping() bool {
	select {
	case <-fr.done:
		return true
	default:
		return false
	}
}

// wrapFranzGroupError prefixes a group error of kgo.
func wrapFranzGroupError(groupID string, err error) error {
	var gs *kgo.ErrGroupSession
	if errors.As(err, &gs) {
		err = gs.Err
	}
	if errors.Is(err, kerr.GroupAuthorizationFailed) {
		return fmt.Errorf("kafka: group %q: not authorized to join it: %w (an ACL granting Read on group %q is needed)", groupID, err, groupID)
	}
	return fmt.Errorf("kafka: group %q: %w", groupID, err)
}

// checkTopicsFranz is checkTopics on a kgo client (see awaitTopics).
func checkTopicsFranz(ctx context.Context, cl *kgo.Client, topics []string, sets [][]string) error {
	return awaitTopics(ctx, topics, sets, func(int) (map[string]int, error) {
		return franzTopicCounts(ctx, cl, topics)
	})
}

// franzTopicCounts asks the cluster for the partition counts of topics; a
// topic it does not know is absent.
func franzTopicCounts(ctx context.Context, cl *kgo.Client, topics []string) (map[string]int, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int, len(topics))
	for _, md := range resp.Topics {
		if md.Topic == nil {
			continue
		}
		switch err := kerr.ErrorForCode(md.ErrorCode); {
		case err == nil, errors.Is(err, kerr.LeaderNotAvailable):
			counts[*md.Topic] = len(md.Partitions)
		case errors.Is(err, kerr.UnknownTopicOrPartition):
		default:
			return nil, fmt.Errorf("kafka: metadata of %q: %w", *md.Topic, err)
		}
	}
	return counts, nil
}
