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
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicSpec describes a topic for [Admin.EnsureTopics].
type TopicSpec struct {
	// Name of the topic.
	Name string
	// Partitions is the partition count, at least 1.
	Partitions int32
	// ReplicationFactor 0 means the broker's default.
	ReplicationFactor int16
	// Config holds topic configs such as cleanup.policy=compact.
	Config map[string]string
}

// Admin administers topics and reads offsets. It is safe for concurrent use.
//
// sarama takes no context: ctx is checked before every request and between
// polls, while a request already sent is bounded by sarama's network
// timeouts (30 s by default), not by ctx.
type Admin struct {
	cfg    Config
	client sarama.Client
	admin  sarama.ClusterAdmin
	// recordBytes is the mean record size (key, value, overhead) of the
	// last record batch ReadRange read, to size its fetches.
	recordBytes atomic.Int64
	// franz is the kgo client of ReadRange on franz-go (reader_franz.go),
	// connected on first use.
	franzMu sync.Mutex
	franz   *kgo.Client
}

// NewAdmin connects an Admin to the cluster.
func NewAdmin(cfg Config) (*Admin, error) {
	sc, err := cfg.saramaConfig()
	if err != nil {
		return nil, err
	}
	client, err := newClient(cfg.Brokers, sc)
	if err != nil {
		return nil, err
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("kafka: admin: %w", err)
	}
	return &Admin{cfg: cfg, client: client, admin: admin}, nil
}

// Close releases the connections. It is safe to call more than once.
func (a *Admin) Close() error {
	a.franzMu.Lock()
	if a.franz != nil {
		a.franz.Close()
	}
	a.franzMu.Unlock()
	if a.client.Closed() {
		return nil
	}
	if err := a.admin.Close(); err != nil && !errors.Is(err, sarama.ErrClosedClient) {
		return fmt.Errorf("kafka: close admin: %w", err)
	}
	return nil
}

// EnsureTopics creates the topics that do not exist and checks the ones
// that do. An existing topic with the asked partition count is fine (its
// configs are not compared); another count is an error wrapping
// [ErrPartitionMismatch] that names both counts. EnsureTopics returns once
// every topic is visible in the cluster metadata with a leader for every
// partition.
func (a *Admin) EnsureTopics(ctx context.Context, specs []TopicSpec) error {
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		if s.Name == "" {
			return fmt.Errorf("%w: topic with an empty name", ErrConfig)
		}
		if s.Partitions < 1 {
			return fmt.Errorf("%w: topic %q: %d partitions", ErrConfig, s.Name, s.Partitions)
		}
		if s.ReplicationFactor < 0 {
			return fmt.Errorf("%w: topic %q: replication factor %d", ErrConfig, s.Name, s.ReplicationFactor)
		}
		names = append(names, s.Name)
	}
	if len(specs) == 0 {
		return nil
	}
	existing, err := a.describe(ctx, names)
	if err != nil {
		return err
	}
	var missing []TopicSpec
	for _, s := range specs {
		if _, ok := existing[s.Name]; !ok {
			missing = append(missing, s)
		}
	}
	if err := a.createTopics(ctx, missing); err != nil {
		return err
	}
	// Wait until every topic is visible with leaders, then compare counts:
	// a topic created concurrently by someone else is checked the same way.
	for {
		counts, ready, err := a.readiness(ctx, names)
		if err != nil {
			return err
		}
		if ready {
			for _, s := range specs {
				if got := counts[s.Name]; got != s.Partitions {
					return fmt.Errorf("%w: topic %q has %d partitions, want %d",
						ErrPartitionMismatch, s.Name, got, s.Partitions)
				}
			}
			return nil
		}
		if err := Pause(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("kafka: wait for topics %v: %w", names, err)
		}
	}
}

// createTopics creates specs in one CreateTopics request to the
// controller, as Kafka Streams creates its internal topics: a topology
// with hundreds of internal topics starts in one round trip, not hundreds
// (each of which waits for the controller to commit the topic). A topic
// that already exists is fine; the ones that failed with an error a retry
// can cure (createRetriable) are asked for again, the others are errors.
func (a *Admin) createTopics(ctx context.Context, specs []TopicSpec) error {
	pending := make(map[string]*sarama.TopicDetail, len(specs))
	for _, s := range specs {
		detail := &sarama.TopicDetail{
			NumPartitions:     s.Partitions,
			ReplicationFactor: s.ReplicationFactor,
			ConfigEntries:     make(map[string]*string, len(s.Config)),
		}
		if detail.ReplicationFactor == 0 {
			detail.ReplicationFactor = -1 // broker default (KIP-464)
		}
		for k, v := range s.Config {
			detail.ConfigEntries[k] = &v
		}
		pending[s.Name] = detail
	}
	var failed string // the topic of the last error
	err := a.retryWhile(ctx, createRetriable, func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("kafka: ensure topics: %w", err)
		}
		if len(pending) == 0 {
			return nil
		}
		controller, err := a.client.Controller()
		if err != nil {
			return err
		}
		conf := a.client.Config()
		resp, err := controller.CreateTopics(sarama.NewCreateTopicsRequest(conf.Version, pending, conf.Admin.Timeout, false))
		if err != nil {
			return err
		}
		var retryErr error
		for name := range pending {
			topicErr, ok := resp.TopicErrors[name]
			switch {
			case !ok:
				failed, retryErr = name, sarama.ErrIncompleteResponse
			case errors.Is(topicErr.Err, sarama.ErrNoError), errors.Is(topicErr.Err, sarama.ErrTopicAlreadyExists):
				delete(pending, name)
			case createRetriable(topicErr):
				failed, retryErr = name, topicErr
			default:
				failed = name
				return topicErr
			}
		}
		return retryErr
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sarama.ErrTopicAuthorizationFailed):
		return fmt.Errorf("kafka: create topic %q: %w (an ACL granting Create on it is needed)", failed, err)
	case errors.Is(err, sarama.ErrInvalidReplicationFactor):
		return fmt.Errorf("kafka: create topic %q: %w (for %v fewer brokers were registered than the replication factor: is it above the cluster's brokers?)", failed, err, retryBudget)
	case failed == "":
		return fmt.Errorf("kafka: create topics: %w", err)
	default:
		return fmt.Errorf("kafka: create topic %q: %w", failed, err)
	}
}

// PartitionCounts returns the partition count of each topic. A topic the
// cluster does not have is an error wrapping [ErrUnknownTopic].
func (a *Admin) PartitionCounts(ctx context.Context, topics []string) (map[string]int32, error) {
	found, err := a.describe(ctx, topics)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int32, len(topics))
	for _, t := range topics {
		md, ok := found[t]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownTopic, t)
		}
		counts[t] = int32(len(md.Partitions))
	}
	return counts, nil
}

// describe returns the metadata of the topics that exist; unknown ones are
// absent from the map. It never creates a topic.
func (a *Admin) describe(ctx context.Context, topics []string) (map[string]*sarama.TopicMetadata, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("kafka: describe topics: %w", err)
	}
	mds, err := a.describeTopics(ctx, topics)
	if err != nil {
		return nil, err
	}
	found := make(map[string]*sarama.TopicMetadata, len(mds))
	for _, md := range mds {
		switch {
		case md == nil:
		case errors.Is(md.Err, sarama.ErrNoError):
			found[md.Name] = md
		case errors.Is(md.Err, sarama.ErrUnknownTopicOrPartition):
		case errors.Is(md.Err, sarama.ErrLeaderNotAvailable):
			// just created, leaders not elected yet: it exists
			found[md.Name] = md
		default:
			return nil, fmt.Errorf("kafka: describe topic %q: %w", md.Name, md.Err)
		}
	}
	return found, nil
}

// describeTopics asks for the metadata of topics, retrying what a retry
// can cure.
func (a *Admin) describeTopics(ctx context.Context, topics []string) ([]*sarama.TopicMetadata, error) {
	var mds []*sarama.TopicMetadata
	err := a.retry(ctx, func() (err error) {
		mds, err = a.admin.DescribeTopics(topics)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("kafka: describe topics %v: %w", topics, err)
	}
	return mds, nil
}

// readiness reports the partition counts and whether every topic exists
// with a leader for each partition.
func (a *Admin) readiness(ctx context.Context, topics []string) (map[string]int32, bool, error) {
	found, err := a.describe(ctx, topics)
	if err != nil {
		return nil, false, err
	}
	counts := make(map[string]int32, len(found))
	ready := len(found) == len(topics)
	for name, md := range found {
		counts[name] = int32(len(md.Partitions))
		if len(md.Partitions) == 0 {
			ready = false
		}
		for _, p := range md.Partitions {
			if !errors.Is(p.Err, sarama.ErrNoError) || p.Leader < 0 {
				ready = false
			}
		}
	}
	return counts, ready, nil
}

// EndOffsets returns the high watermark of each partition (the offset the
// next record will get). Nil or empty partitions means all partitions.
func (a *Admin) EndOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	return a.listOffsets(ctx, topic, partitions, sarama.OffsetNewest, sarama.ReadUncommitted)
}

// StableOffsets returns the last stable offset of each partition: the end
// a read_committed consumer can read up to, below every open transaction.
// Nil or empty partitions means all partitions.
func (a *Admin) StableOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	return a.listOffsets(ctx, topic, partitions, sarama.OffsetNewest, sarama.ReadCommitted)
}

// StartOffsets returns the log start offset of each partition (the oldest
// offset still stored). Nil or empty partitions means all partitions.
func (a *Admin) StartOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	return a.listOffsets(ctx, topic, partitions, sarama.OffsetOldest, sarama.ReadUncommitted)
}

// orAllPartitions returns partitions, or when it is empty every partition
// of topic.
func (a *Admin) orAllPartitions(ctx context.Context, topic string, partitions []int32) ([]int32, error) {
	if len(partitions) > 0 {
		return partitions, nil
	}
	counts, err := a.PartitionCounts(ctx, []string{topic})
	if err != nil {
		return nil, err
	}
	for p := range counts[topic] {
		partitions = append(partitions, p)
	}
	return partitions, nil
}

func (a *Admin) listOffsets(ctx context.Context, topic string, partitions []int32, query int64, iso sarama.IsolationLevel) (map[int32]int64, error) {
	partitions, err := a.orAllPartitions(ctx, topic, partitions)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(partitions))
	pending := slices.Clone(partitions)
	start := time.Now()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("kafka: list offsets of %q: %w", topic, err)
		}
		req := map[string]map[int32]int64{topic: {}}
		for _, p := range pending {
			req[topic][p] = query
		}
		res, err := a.admin.ListOffsets(req, &sarama.ListOffsetsOptions{IsolationLevel: iso})
		var retry []int32
		var lastErr error
		for _, p := range pending {
			r := res[topic][p]
			switch {
			case r == nil:
				retry, lastErr = append(retry, p), err
			case errors.Is(r.Err, sarama.ErrNoError) || r.Err == nil:
				out[p] = r.Offset
			case retriableMetadataError(r.Err):
				retry, lastErr = append(retry, p), r.Err
			case errors.Is(r.Err, sarama.ErrUnknownTopicOrPartition):
				return nil, fmt.Errorf("%w: %q partition %d", ErrUnknownTopic, topic, p)
			default:
				return nil, &PartitionError{Topic: topic, Partition: p, Err: r.Err}
			}
		}
		if len(retry) == 0 {
			return out, nil
		}
		if time.Since(start) > retryBudget {
			return nil, fmt.Errorf("kafka: list offsets of %q partitions %v: %d attempts in %v: %w", topic, retry, attempt+1, retryBudget, lastErr)
		}
		_ = a.client.RefreshMetadata(topic)
		pending = retry
		if err := Pause(ctx, Backoff(attempt)); err != nil {
			return nil, fmt.Errorf("kafka: list offsets of %q: %w", topic, err)
		}
	}
}

// CommittedOffsets returns the group's committed offset of each partition,
// -1 where the group has none (or the group does not exist). It asks for stable offsets (KIP-447): while
// a transaction that commits offsets for the group is open, the broker
// answers UNSTABLE_OFFSET_COMMIT and CommittedOffsets retries until ctx is
// done.
func (a *Admin) CommittedOffsets(ctx context.Context, group, topic string, partitions []int32) (map[int32]int64, error) {
	partitions, err := a.orAllPartitions(ctx, topic, partitions)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		out, retry, err := a.fetchCommitted(group, topic, partitions)
		if err == nil {
			return out, nil
		}
		if !retry || time.Since(start) > retryBudget {
			return nil, err
		}
		if perr := Pause(ctx, Backoff(attempt)); perr != nil {
			return nil, fmt.Errorf("%w (after %w)", perr, err)
		}
	}
}

// Heartbeat asks the group coordinator whether the member m names is
// still in its group: nil if it is (a rebalance in progress, or a
// generation that moved on since m was read, included), otherwise the
// error — [MemberGone] tells a member that was removed, for instance after
// its process stalled past the session timeout. sarama heartbeats on its
// own; this is for a member that must know before it writes. It goes over
// the admin client's connection, never behind a JoinGroup that waits the
// whole rebalance on the group's own.
func (a *Admin) Heartbeat(ctx context.Context, m GroupMetadata) error {
	answer, err := a.heartbeat(ctx, m)
	switch {
	case err != nil:
		return err
	case errors.Is(answer, sarama.ErrNoError), errors.Is(answer, sarama.ErrRebalanceInProgress),
		errors.Is(answer, sarama.ErrIllegalGeneration):
		return nil
	}
	return fmt.Errorf("kafka: heartbeat: %w", answer)
}

// heartbeat sends m's member a Heartbeat over the admin client's
// connection and returns the coordinator's answer; err is a failure to
// ask. A coordinator that moved is looked up again for the next request.
func (a *Admin) heartbeat(ctx context.Context, m GroupMetadata) (answer sarama.KError, err error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("kafka: heartbeat: %w", err)
	}
	req := &sarama.HeartbeatRequest{
		Version: groupRequestVersion(4, 3, 2),
		GroupId: m.GroupID, GenerationId: m.GenerationID, MemberId: m.MemberID,
	}
	if m.InstanceID != "" {
		req.GroupInstanceId = &m.InstanceID
	}
	coord, err := a.client.Coordinator(m.GroupID)
	if err != nil {
		_ = a.client.RefreshCoordinator(m.GroupID)
		return 0, fmt.Errorf("kafka: heartbeat: coordinator of group %q: %w", m.GroupID, err)
	}
	resp, err := coord.Heartbeat(req)
	if err != nil {
		_ = a.client.RefreshCoordinator(m.GroupID)
		return 0, fmt.Errorf("kafka: heartbeat: %w", err)
	}
	if errors.Is(resp.Err, sarama.ErrNotCoordinatorForConsumer) {
		_ = a.client.RefreshCoordinator(m.GroupID)
	}
	return resp.Err, nil
}

func (a *Admin) fetchCommitted(group, topic string, partitions []int32) (map[int32]int64, bool, error) {
	coord, err := a.client.Coordinator(group)
	if err != nil {
		_ = a.client.RefreshCoordinator(group)
		return nil, true, fmt.Errorf("kafka: coordinator of group %q: %w", group, err)
	}
	req := sarama.NewOffsetFetchRequest(protocolVersion, group, map[string][]int32{topic: partitions})
	req.RequireStable = req.Version >= 7
	resp, err := coord.FetchOffset(req)
	if err != nil {
		_ = a.client.RefreshCoordinator(group)
		return nil, true, fmt.Errorf("kafka: fetch offsets of group %q: %w", group, err)
	}
	gerr := resp.GroupError()
	if errors.Is(gerr, sarama.ErrGroupIDNotFound) { // kfake; Kafka answers -1s
		out := make(map[int32]int64, len(partitions))
		for _, p := range partitions {
			out[p] = -1
		}
		return out, false, nil
	}
	if !errors.Is(gerr, sarama.ErrNoError) {
		return nil, retriableGroupError(gerr), fmt.Errorf("kafka: fetch offsets of group %q: %w", group, gerr)
	}
	out := make(map[int32]int64, len(partitions))
	for _, p := range partitions {
		b := resp.GetBlock(topic, p)
		if b == nil {
			return nil, true, &PartitionError{Topic: topic, Partition: p, Err: sarama.ErrIncompleteResponse}
		}
		if !errors.Is(b.Err, sarama.ErrNoError) {
			return nil, retriableGroupError(b.Err), &PartitionError{Topic: topic, Partition: p, Err: b.Err}
		}
		out[p] = b.Offset
	}
	return out, false, nil
}

// retriableMetadataError reports errors that a metadata refresh and a retry
// can cure.
func retriableMetadataError(err error) bool {
	return errors.Is(err, sarama.ErrNotLeaderForPartition) ||
		errors.Is(err, sarama.ErrLeaderNotAvailable) ||
		errors.Is(err, sarama.ErrReplicaNotAvailable) ||
		errors.Is(err, sarama.ErrFencedLeaderEpoch) ||
		errors.Is(err, sarama.ErrUnknownLeaderEpoch) ||
		errors.Is(err, sarama.ErrOffsetNotAvailable) ||
		errors.Is(err, sarama.ErrRequestTimedOut) ||
		errors.Is(err, sarama.ErrNotConnected)
}

// retriableGroupError reports group coordinator errors worth a retry.
func retriableGroupError(err error) bool {
	return errors.Is(err, sarama.ErrNotCoordinatorForConsumer) ||
		errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable) ||
		errors.Is(err, sarama.ErrOffsetsLoadInProgress) ||
		errors.Is(err, sarama.ErrUnstableOffsetCommit) ||
		errors.Is(err, sarama.ErrRequestTimedOut)
}

// retryBudget is how long an operation retries the errors a retry can
// cure — a leader or coordinator that moved, a broker that does not
// answer — before it gives up: Kafka's default.api.timeout.ms. A broker
// that dies keeps its leaderships until the controller fences it
// (broker.session.timeout.ms, 9 s by default) and a restarted one takes
// seconds more to serve; a budget of a few attempts runs out first, and
// a broker restart would stop the application.
const retryBudget = 60 * time.Second

// retry calls op until it succeeds, fails with an error a retry cannot
// cure, or retryBudget passes. Between attempts it refreshes the
// controller and the metadata, so that the next attempt goes to a broker
// that is up: sarama's cluster admin sends to the broker it last took for
// the controller, and a connection refused there is not retried by it.
func (a *Admin) retry(ctx context.Context, op func() error) error {
	return a.retryWhile(ctx, retriableBrokerError, op)
}

// retryWhile is retry with the errors worth a retry told by retriable.
func (a *Admin) retryWhile(ctx context.Context, retriable func(error) bool, op func() error) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := op()
		if err == nil || !retriable(err) || time.Since(start) > retryBudget {
			return err
		}
		a.cfg.logger().Debug("kafka: admin request failed, retrying", "attempt", attempt+1, "err", err)
		_, _ = a.client.RefreshController()
		_ = a.client.RefreshMetadata()
		if perr := Pause(ctx, Backoff(attempt)); perr != nil {
			return fmt.Errorf("%w (after %w)", perr, err)
		}
	}
}

// createRetriable reports the errors of a topic creation worth a retry:
// those of retriableBrokerError, and a replication factor above the
// brokers registered — what a cluster answers while one of its brokers
// restarts (a killed one is fenced, then registers again): an instance
// that starts while a broker is down must not exit with
// "Replication-factor is invalid ... only 2 broker(s) are registered".
func createRetriable(err error) bool {
	return retriableBrokerError(err) || errors.Is(err, sarama.ErrInvalidReplicationFactor)
}

// retriableBrokerError reports errors of a broker that is down, restarting
// or no longer the one to ask: transport errors and the Kafka errors that
// say so. Kafka errors about the request itself are not.
func retriableBrokerError(err error) bool {
	var kerr sarama.KError
	var cfgErr sarama.ConfigurationError
	switch {
	case errors.Is(err, sarama.ErrClosedClient), errors.As(err, &cfgErr):
		return false
	case errors.As(err, &kerr):
		return retriableMetadataError(kerr) || errors.Is(kerr, sarama.ErrNotController) ||
			errors.Is(kerr, sarama.ErrBrokerNotAvailable)
	default:
		return true
	}
}
