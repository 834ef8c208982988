package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// GroupConfig configures a consumer group member.
type GroupConfig struct {
	Config
	// GroupID is the consumer group; required.
	GroupID string
	// Topics to consume; required.
	Topics []string
	// CoPartitioned lists sets of topics whose partitions are assigned by
	// partition number together: partition p of every topic of a set goes
	// to one member. Each topic must be in Topics and in at most one set;
	// the topics of a set must have the same partition count (Run checks).
	CoPartitioned [][]string
	// SessionTimeout (default 45 s), HeartbeatInterval (default 3 s) and
	// RebalanceTimeout (default 60 s) are Kafka's group timeouts. The
	// broker bounds the session timeout (group.min.session.timeout.ms,
	// 6 s by default, on Kafka and kfake alike).
	SessionTimeout time.Duration
	// HeartbeatInterval: see SessionTimeout.
	HeartbeatInterval time.Duration
	// RebalanceTimeout: see SessionTimeout. It also bounds how long a
	// revoked Claim may take to return.
	RebalanceTimeout time.Duration
	// FetchMaxWait is how long the broker may hold a fetch when there is
	// no data (fetch.max.wait.ms); 100 ms by default. A record that arrives
	// ends the wait at once, so this is no latency floor for data; but a
	// broker serves one connection's requests in order, and sarama sends
	// metadata and list-offsets requests on the fetch connection, so an
	// idle long-poll delays them (and with them every claim start) by up
	// to this much. Kafka's 500 ms made rebalances seconds slower. Zero
	// takes Config.Tuning.FetchMaxWait, then the default.
	FetchMaxWait time.Duration
	// InstanceID, if set, makes the member static (KIP-345): a restart
	// within the session timeout keeps the assignment without a rebalance.
	InstanceID string
	// ReadCommitted makes the member read only committed records and fetch
	// its starting offsets stable (KIP-447).
	ReadCommitted bool
	// MemberData, if set, is advertised to the group in this member's
	// subscription; [Admin.GroupMembers] reads it back (weir puts the
	// member's HTTP address there for interactive queries).
	MemberData []byte
	// OnAssignment, if set, is called with the generation whenever this
	// member receives an assignment (each rebalance it takes part in).
	OnAssignment func(generation int32)
	// Replicas configures standby and warm-up replicas (plan_standby.go);
	// the zero value places none.
	Replicas ReplicaConfig
	// OnError receives every error of the group's life that Run does not
	// return: fetch errors, rebalance failures, Kafka errors of claims. It
	// is called from one goroutine, in order, never concurrently; a slow
	// OnError delays later calls but loses nothing. If nil, errors are
	// logged at Error level.
	OnError func(error)
}

// Defaults of [GroupConfig]: the one definition of the group timeouts,
// which weir's options, internal/txn and exactlyonce take from here.
const (
	// DefaultSessionTimeout is GroupConfig.SessionTimeout when none is set
	// (Kafka's session.timeout.ms default since 3.0, KIP-735).
	DefaultSessionTimeout = 45 * time.Second
	// DefaultHeartbeatInterval is GroupConfig.HeartbeatInterval when none
	// is set (Kafka's heartbeat.interval.ms default).
	DefaultHeartbeatInterval = 3 * time.Second
	// DefaultRebalanceTimeout is GroupConfig.RebalanceTimeout when none is
	// set (sarama's default; the Java consumer uses max.poll.interval.ms).
	DefaultRebalanceTimeout = 60 * time.Second
	// DefaultFetchMaxWait is GroupConfig.FetchMaxWait when none is set.
	DefaultFetchMaxWait = 100 * time.Millisecond
)

func (gc GroupConfig) withDefaults() GroupConfig {
	if gc.SessionTimeout == 0 {
		gc.SessionTimeout = DefaultSessionTimeout
	}
	if gc.HeartbeatInterval == 0 {
		gc.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if gc.RebalanceTimeout == 0 {
		gc.RebalanceTimeout = DefaultRebalanceTimeout
	}
	if gc.FetchMaxWait == 0 {
		gc.FetchMaxWait = gc.Config.Tuning.FetchMaxWait
	}
	if gc.FetchMaxWait == 0 {
		gc.FetchMaxWait = DefaultFetchMaxWait
	}
	return gc
}

// Validate reports whether the configuration can be used (after defaults).
// Errors wrap [ErrConfig].
func (gc GroupConfig) Validate() error {
	gc = gc.withDefaults()
	if err := gc.Config.Validate(); err != nil {
		return err
	}
	if gc.GroupID == "" {
		return fmt.Errorf("%w: empty group id", ErrConfig)
	}
	if len(gc.Topics) == 0 {
		return fmt.Errorf("%w: group %q: no topics", ErrConfig, gc.GroupID)
	}
	if gc.HeartbeatInterval <= 0 || gc.SessionTimeout <= 0 || gc.RebalanceTimeout <= 0 || gc.FetchMaxWait <= 0 {
		return fmt.Errorf("%w: group %q: negative timeout", ErrConfig, gc.GroupID)
	}
	if gc.HeartbeatInterval >= gc.SessionTimeout {
		return fmt.Errorf("%w: group %q: heartbeat interval %v not below session timeout %v",
			ErrConfig, gc.GroupID, gc.HeartbeatInterval, gc.SessionTimeout)
	}
	inSet := make(map[string]bool)
	for _, set := range gc.CoPartitioned {
		for _, t := range set {
			if !slices.Contains(gc.Topics, t) {
				return fmt.Errorf("%w: group %q: co-partitioned topic %q is not consumed", ErrConfig, gc.GroupID, t)
			}
			if inSet[t] {
				return fmt.Errorf("%w: group %q: topic %q is in two co-partitioned sets", ErrConfig, gc.GroupID, t)
			}
			inSet[t] = true
		}
	}
	return nil
}

// Group is one member of a consumer group. Run drives it; a Group can run
// again after Run returned, but not twice at once. It is safe for
// concurrent use.
type Group struct {
	cfg     GroupConfig
	client  Client
	running atomic.Bool
}

// NewGroup validates the configuration and returns a Group on the client
// [ResolveClient] picks for cfg.Client. It does not connect: Run does.
func NewGroup(cfg GroupConfig) (*Group, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client, err := ResolveClient(cfg.Client)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Topics = slices.Clone(cfg.Topics)
	cfg.CoPartitioned = slices.Clone(cfg.CoPartitioned)
	for i, set := range cfg.CoPartitioned {
		cfg.CoPartitioned[i] = slices.Clone(set)
	}
	return &Group{cfg: cfg, client: client}, nil
}

// saramaConfig builds the consumer configuration of one Run.
func (g *Group) saramaConfig(strategy sarama.BalanceStrategy) (*sarama.Config, error) {
	sc, err := g.cfg.saramaConfig()
	if err != nil {
		return nil, err
	}
	sc.Consumer.Return.Errors = true // always: every error reaches OnError
	sc.Consumer.Offsets.AutoCommit.Enable = false
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.MaxWaitTime = g.cfg.FetchMaxWait
	// sarama's 2 s defaults pause a partition after a fetch error, and a
	// join after a coordinator error, for long; Java uses 100 ms.
	sc.Consumer.Retry.Backoff = 250 * time.Millisecond
	sc.Consumer.Group.Rebalance.Retry.Backoff = 250 * time.Millisecond
	if g.cfg.ReadCommitted {
		sc.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	sc.Consumer.Group.Session.Timeout = g.cfg.SessionTimeout
	sc.Consumer.Group.Heartbeat.Interval = g.cfg.HeartbeatInterval
	sc.Consumer.Group.Rebalance.Timeout = g.cfg.RebalanceTimeout
	// A JoinGroup legitimately waits up to the rebalance timeout for the
	// other members (a killed member counts until the coordinator gives up
	// on it). sarama reads every response with Net.ReadTimeout (30 s), so
	// with a longer rebalance timeout a member gave up on its own join,
	// rejoined after the coordinator had completed without it, and started
	// the next rebalance — a livelock seen under repeated SIGKILLs. The
	// Java consumer gives JoinGroup the rebalance timeout plus 5 s; sarama
	// has one timeout per client, so the group's client gets that.
	if rt := g.cfg.RebalanceTimeout + 5*time.Second; sc.Net.ReadTimeout < rt {
		sc.Net.ReadTimeout = rt
	}
	sc.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	sc.Consumer.Group.InstanceId = g.cfg.InstanceID
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return sc, nil
}

// Run joins the group and calls h.Claim for every partition assigned to
// this member, until ctx is done or a claim fails. It then stops claims
// (their Records close), waits for every goroutine it started, leaves the
// group and returns.
//
// Run returns nil when stopped by ctx, the first error a Claim returned
// (a *PartitionError naming the partition), or an error that retrying
// cannot cure: unknown topics, co-partitioned topics with different
// partition counts (wrapping [ErrPartitionMismatch]), a rejected
// configuration, a fenced static member, missing authorisation. Other
// errors — a failed join, a broken connection — go to OnError and Run
// tries again.
func (g *Group) Run(ctx context.Context, h Handler) error {
	if h == nil {
		return fmt.Errorf("%w: nil handler", ErrConfig)
	}
	if !g.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer g.running.Store(false)
	if g.client == ClientFranz {
		return g.runFranz(ctx, h)
	}

	strategy := newCopartitionStrategy(g.cfg.CoPartitioned, g.cfg.MemberData, g.cfg.OnAssignment)
	strategy.replicas, strategy.log = g.cfg.Replicas, g.cfg.logger()
	sc, err := g.saramaConfig(strategy)
	if err != nil {
		return err
	}
	client, err := newSplitClient(g.cfg.Config, sc)
	if err != nil {
		return err
	}
	defer client.close()
	if err := checkTopics(ctx, client, g.cfg.Topics, g.cfg.CoPartitioned); err != nil {
		return err
	}
	cg, err := sarama.NewConsumerGroupFromClient(g.cfg.GroupID, client)
	if err != nil {
		return fmt.Errorf("kafka: group %q: %w", g.cfg.GroupID, err)
	}

	consumeCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	rs := &runState{
		member: newMember(ctx, g.cfg, h, newCommitter(client, g.cfg.GroupID, g.cfg.InstanceID), stop),
		client: client,
	}
	var dispatcher, pump sync.WaitGroup
	dispatcher.Go(rs.errs.run)
	pump.Go(func() {
		for err := range cg.Errors() {
			// A fetch refused by the authorizer is refused again at every
			// retry: sarama's partition consumer would go on asking while
			// the member holds its partitions and processes nothing.
			if errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
				rs.fail(wrapConsumerError(g.cfg.GroupID, err))
				continue
			}
			rs.report(wrapConsumerError(g.cfg.GroupID, err))
		}
	})

	// A stop while the member joins must not wait for the rebalance to
	// end: a JoinGroup can wait the whole rebalance timeout (and kfake
	// never answers one whose member it removed meanwhile). With no
	// session running there is nothing to commit, so the join is aborted.
	consumed := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		select {
		case <-consumeCtx.Done():
			if rs.sessions.Load() == 0 {
				client.abortCoordination()
			}
		case <-consumed:
		}
	})
	rs.consume(consumeCtx, cg, &groupHandler{run: rs})
	close(consumed)
	watcher.Wait()

	// Every claim has returned. Leave the group (Close also closes Errors;
	// the few errors it drains itself come back as its result).
	if err := cg.Close(); err != nil {
		rs.report(wrapConsumerError(g.cfg.GroupID, err))
	}
	pump.Wait()
	rs.errs.close()
	dispatcher.Wait()
	return rs.result()
}

// consume calls sarama's Consume until ctx is done or the run failed.
func (rs *runState) consume(ctx context.Context, cg sarama.ConsumerGroup, gh *groupHandler) {
	quick := 0
	for {
		start := time.Now()
		err := rs.consumeOnce(ctx, cg, gh)
		if ctx.Err() != nil || errors.Is(err, sarama.ErrClosedConsumerGroup) {
			return
		}
		if err != nil {
			werr := wrapConsumerError(rs.cfg.GroupID, err)
			if fatalGroupError(err) {
				rs.fail(werr)
				return
			}
			rs.report(werr)
		}
		// A session that ends at once (an error, or a handler returning
		// early) must not turn into a tight join loop.
		if err != nil || time.Since(start) < time.Second {
			quick++
		} else {
			quick = 0
		}
		if quick > 0 && Pause(ctx, Backoff(quick+2)) != nil {
			return
		}
	}
}

// consumeOnce runs one sarama session; a probe (ReplicaConfig.Probe) ends
// it early, and consume's next round rejoins.
func (rs *runState) consumeOnce(ctx context.Context, cg sarama.ConsumerGroup, gh *groupHandler) error {
	probe := rs.cfg.Replicas.Probe
	if probe == nil {
		return cg.Consume(ctx, rs.cfg.Topics, gh)
	}
	sessCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		select {
		case <-probe:
			rs.log.Info("weir: probing rebalance: rejoining the group", "group", rs.cfg.GroupID)
			cancel()
		case <-sessCtx.Done():
		}
	})
	return cg.Consume(sessCtx, rs.cfg.Topics, gh)
}

// checkTopics is awaitTopics on sarama: every topic exists and
// co-partitioned topics have the same partition count.
//
// It asks one broker directly (topicCounts): the client's RefreshMetadata
// retries an unknown topic Metadata.Retry.Max times before it fails. A
// broker that does not answer (down, restarting), or does not know a
// topic yet, is followed by the next one at the next attempt: a member of
// a three-broker cluster that trusted the first answer would exit at
// start.
func checkTopics(ctx context.Context, client sarama.Client, topics []string, sets [][]string) error {
	return awaitTopics(ctx, topics, sets, func(attempt int) (map[string]int, error) {
		return topicCounts(client, attempt, topics)
	})
}

// topicCounts asks one broker for the partition counts of topics: the
// least loaded on the first attempt, then each in turn. A topic it does
// not know is absent. A broker that does not answer is closed, to be
// reopened by the next attempt that picks it.
func topicCounts(client sarama.Client, attempt int, topics []string) (map[string]int, error) {
	b := client.LeastLoadedBroker()
	if brokers := client.Brokers(); attempt > 0 && len(brokers) > 0 {
		b = brokers[attempt%len(brokers)]
	}
	if b == nil {
		return nil, sarama.ErrOutOfBrokers
	}
	_ = b.Open(client.Config()) // ErrAlreadyConnected when it is, as usual
	resp, err := b.GetMetadata(sarama.NewMetadataRequest(protocolVersion, topics))
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	counts := make(map[string]int, len(topics))
	for _, md := range resp.Topics {
		switch {
		case errors.Is(md.Err, sarama.ErrNoError), errors.Is(md.Err, sarama.ErrLeaderNotAvailable):
			counts[md.Name] = len(md.Partitions)
		case errors.Is(md.Err, sarama.ErrUnknownTopicOrPartition):
		default:
			return nil, fmt.Errorf("kafka: metadata of %q: %w", md.Name, md.Err)
		}
	}
	return counts, nil
}

// runState is one Run of a Group on sarama.
type runState struct {
	*member
	client sarama.Client
	// sessions counts the sessions set up and not yet cleaned up.
	sessions atomic.Int32
}

// splitClient is the sarama.Client a consumer group runs on: fetches and
// metadata use the embedded client's connections, group coordination
// (JoinGroup, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit, LeaveGroup)
// the coord client's.
//
// A Kafka broker (kfake too) handles the requests of one connection one at
// a time, in order, and sarama keeps one connection per broker. With one
// client, a commit waits behind a fetch long-poll (Consumer.MaxWaitTime),
// and fetching for the partitions a member keeps stalls behind a JoinGroup
// that lasts the whole rebalance — which defeats the cooperative protocol.
// sarama reaches the coordinator only through Client.Coordinator and
// Client.RefreshCoordinator, so overriding those two moves all group
// traffic to connections of its own (as the Java client does).
type splitClient struct {
	sarama.Client
	coord sarama.Client
	// coordConns are the coord client's connections (see
	// abortCoordination).
	coordConns *connTracker
}

func newSplitClient(cfg Config, sc *sarama.Config) (*splitClient, error) {
	fetch, err := newClient(cfg.Brokers, sc)
	if err != nil {
		return nil, err
	}
	csc, err := coordConfig(cfg, sc)
	var coord sarama.Client
	var conns *connTracker
	if err == nil {
		conns = newConnTracker(csc)
		conns.install(csc)
		coord, err = newClient(cfg.Brokers, csc)
	}
	if err != nil {
		_ = fetch.Close()
		return nil, err
	}
	return &splitClient{Client: fetch, coord: coord, coordConns: conns}, nil
}

// coordConfig is the configuration of a split client's coordinator client:
// a config (and metric registry) of its own with the group's settings of
// sc — and sc's read timeout, which covers a JoinGroup that waits the
// whole rebalance (see Group.saramaConfig); the coordinator client is the
// one that sends it.
func coordConfig(cfg Config, sc *sarama.Config) (*sarama.Config, error) {
	csc, err := cfg.saramaConfig()
	if err != nil {
		return nil, err
	}
	csc.Consumer.Group = sc.Consumer.Group
	csc.Consumer.IsolationLevel = sc.Consumer.IsolationLevel
	csc.Consumer.Offsets = sc.Consumer.Offsets
	csc.Net.ReadTimeout = sc.Net.ReadTimeout
	return csc, nil
}

// Coordinator implements sarama.Client with the coord client.
func (s *splitClient) Coordinator(group string) (*sarama.Broker, error) {
	return s.coord.Coordinator(group)
}

// RefreshCoordinator implements sarama.Client with the coord client.
func (s *splitClient) RefreshCoordinator(group string) error {
	return s.coord.RefreshCoordinator(group)
}

// abortCoordination fails the group requests in flight at once, a
// JoinGroup or SyncGroup waiting for a rebalance included (sarama offers
// no way to cancel one).
func (s *splitClient) abortCoordination() { s.coordConns.closeAll() }

func (s *splitClient) close() {
	_ = s.coord.Close()
	_ = s.Client.Close()
}
