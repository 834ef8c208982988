package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// What a start-up check (runtime's preflight, `weir check`) asks the
// cluster: the facts of the topics an application reads, writes and
// creates, and whether the brokers offer what exactly-once needs. The
// decisions — what is wrong with those facts — are runtime's, in pure code.

// TopicFacts is what the cluster says of one topic.
type TopicFacts struct {
	// Partitions is the partition count; 0 when the topic does not exist.
	Partitions int32
	// CleanupPolicy is the topic's cleanup.policy ("delete", "compact",
	// "compact,delete"), "" when it was not asked for or the topic does
	// not exist.
	CleanupPolicy string
	// Unauthorized: the cluster refused to describe the topic
	// (TOPIC_AUTHORIZATION_FAILED); Partitions is then 0.
	Unauthorized bool
}

// Exists reports whether the topic exists.
func (f TopicFacts) Exists() bool { return f.Partitions > 0 }

// TopicFacts returns the facts of every topic in topics (absent ones with
// Partitions 0), and the cleanup.policy of those in withPolicy that exist.
func (a *Admin) TopicFacts(ctx context.Context, topics, withPolicy []string) (map[string]TopicFacts, error) {
	out := make(map[string]TopicFacts, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	mds, err := a.describeTopics(ctx, topics)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		out[t] = TopicFacts{}
	}
	for _, md := range mds {
		switch {
		case md == nil:
		case errors.Is(md.Err, sarama.ErrNoError), errors.Is(md.Err, sarama.ErrLeaderNotAvailable):
			out[md.Name] = TopicFacts{Partitions: int32(len(md.Partitions))}
		case errors.Is(md.Err, sarama.ErrUnknownTopicOrPartition):
		case errors.Is(md.Err, sarama.ErrTopicAuthorizationFailed):
			out[md.Name] = TopicFacts{Unauthorized: true}
		default:
			return nil, fmt.Errorf("kafka: describe topic %q: %w", md.Name, md.Err)
		}
	}
	var resources []*sarama.ConfigResource
	for _, t := range withPolicy {
		if out[t].Exists() {
			resources = append(resources, &sarama.ConfigResource{
				Type: sarama.TopicResource, Name: t, ConfigNames: []string{"cleanup.policy"},
			})
		}
	}
	if len(resources) == 0 {
		return out, nil
	}
	var results []*sarama.ConfigResourceResult
	// The metadata above named each of these topics; a broker that says
	// one does not exist has not caught up with the cluster's metadata yet
	// (a topic another instance has just created): it is asked again.
	notYet := func(err error) bool {
		return retriableBrokerError(err) || errors.Is(err, sarama.ErrUnknownTopicOrPartition)
	}
	err = a.retryWhile(ctx, notYet, func() (err error) {
		results, err = a.admin.DescribeConfigs(resources, sarama.DescribeConfigsOptions{})
		if err != nil {
			return err
		}
		for _, r := range results {
			if kerr := sarama.KError(r.ErrorCode); errors.Is(kerr, sarama.ErrUnknownTopicOrPartition) {
				return fmt.Errorf("kafka: describe configs of topic %q: %w", r.Name, kerr)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kafka: describe topic configs: %w", err)
	}
	for _, r := range results {
		if r.ErrorCode != 0 {
			err := sarama.KError(r.ErrorCode)
			if AuthorizationFailed(err) {
				return nil, fmt.Errorf("kafka: describe configs of topic %q: %w (an ACL granting DescribeConfigs on it is needed)", r.Name, err)
			}
			return nil, fmt.Errorf("kafka: describe configs of topic %q: %w", r.Name, err)
		}
		f, ok := out[r.Name]
		if !ok {
			continue
		}
		f.CleanupPolicy = "delete" // Kafka's default when the broker omits it
		for _, c := range r.Configs {
			if c.Name == "cleanup.policy" {
				f.CleanupPolicy = c.Value
			}
		}
		out[r.Name] = f
	}
	return out, nil
}

// The API keys of the transactional protocol, and the versions exactly-once
// needs: TxnOffsetCommit v3 carries the group metadata (KIP-447, Kafka 2.5).
const (
	apiInitProducerID    = 22
	apiAddPartitionsTxn  = 24
	apiAddOffsetsToTxn   = 25
	apiEndTxn            = 26
	apiTxnOffsetCommit   = 28
	minTxnOffsetCommitV3 = 3
)

// transactionSupport reports what the API versions a broker advertises
// (max version by API key) lack for exactly-once, nil if nothing.
func transactionSupport(broker string, maxVersion map[int16]int16) error {
	var missing []string
	for _, api := range []struct {
		key  int16
		name string
	}{
		{apiInitProducerID, "InitProducerId"}, {apiAddPartitionsTxn, "AddPartitionsToTxn"},
		{apiAddOffsetsToTxn, "AddOffsetsToTxn"}, {apiEndTxn, "EndTxn"}, {apiTxnOffsetCommit, "TxnOffsetCommit"},
	} {
		if _, ok := maxVersion[api.key]; !ok {
			missing = append(missing, api.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: broker %s does not offer %v: it is too old for transactions (Kafka 0.11 or later is needed, 2.5 or later for exactly-once)",
			ErrTransactionsUnavailable, broker, missing)
	}
	if v := maxVersion[apiTxnOffsetCommit]; v < minTxnOffsetCommitV3 {
		return fmt.Errorf("%w: broker %s serves TxnOffsetCommit up to v%d; exactly-once needs v%d (KIP-447, Kafka 2.5 or later)",
			ErrTransactionsUnavailable, broker, v, minTxnOffsetCommitV3)
	}
	return nil
}

// TransactionCoordinatorWait bounds how long [Admin.CheckTransactions]
// waits for a transaction coordinator: a fresh cluster creates its
// __transaction_state topic on the first request, which takes seconds.
var TransactionCoordinatorWait = 20 * time.Second

// CheckTransactions checks that the cluster can run exactly-once for
// transactionalID: every broker offers the transactional APIs at the
// versions weir needs, and a transaction coordinator answers for the id.
// Errors wrap [ErrTransactionsUnavailable] and say which: a broker too old,
// transactions not authorized, or no coordinator (transactions disabled, or
// a __transaction_state topic the cluster cannot create — its replication
// factor, transaction.state.log.replication.factor, above the brokers
// available).
func (a *Admin) CheckTransactions(ctx context.Context, transactionalID string) error {
	if err := a.retry(ctx, func() error { return a.client.RefreshMetadata() }); err != nil {
		return fmt.Errorf("kafka: check transactions: %w", err)
	}
	var errs []error
	for _, b := range a.client.Brokers() {
		_ = b.Open(a.client.Config()) // ErrAlreadyConnected when it is
		resp, err := b.ApiVersions(&sarama.ApiVersionsRequest{Version: 0})
		if err != nil {
			continue // a broker down is not this check's business
		}
		if resp.ErrorCode != 0 {
			errs = append(errs, fmt.Errorf("kafka: api versions of broker %s: %w", b.Addr(), sarama.KError(resp.ErrorCode)))
			continue
		}
		versions := make(map[int16]int16, len(resp.ApiKeys))
		for _, k := range resp.ApiKeys {
			versions[k.ApiKey] = k.MaxVersion
		}
		if err := transactionSupport(b.Addr(), versions); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return a.findTransactionCoordinator(ctx, transactionalID)
}

// findTransactionCoordinator asks for the coordinator of transactionalID
// until one answers, an error no wait cures comes back, or
// TransactionCoordinatorWait passes.
func (a *Admin) findTransactionCoordinator(ctx context.Context, transactionalID string) error {
	start := time.Now()
	var last error
	for attempt := 0; ; attempt++ {
		b := a.client.LeastLoadedBroker()
		if b == nil {
			last = sarama.ErrOutOfBrokers
		} else {
			_ = b.Open(a.client.Config())
			resp, err := b.FindCoordinator(&sarama.FindCoordinatorRequest{
				Version: 1, CoordinatorKey: transactionalID, CoordinatorType: sarama.CoordinatorTransaction,
			})
			switch {
			case err != nil:
				_ = b.Close()
				last = err
			case errors.Is(resp.Err, sarama.ErrNoError):
				return nil
			case errors.Is(resp.Err, sarama.ErrTransactionalIDAuthorizationFailed),
				errors.Is(resp.Err, sarama.ErrClusterAuthorizationFailed):
				return fmt.Errorf("%w: transactional id %q is not authorized (an ACL granting Write and Describe on it is needed): %w",
					ErrTransactionsUnavailable, transactionalID, resp.Err)
			case errors.Is(resp.Err, sarama.ErrUnsupportedVersion), errors.Is(resp.Err, sarama.ErrInvalidRequest):
				return fmt.Errorf("%w: broker %s cannot find a transaction coordinator (too old): %w",
					ErrTransactionsUnavailable, b.Addr(), resp.Err)
			default:
				last = resp.Err
			}
		}
		if time.Since(start) > TransactionCoordinatorWait {
			return fmt.Errorf("%w: no transaction coordinator for %q after %v: %w (transactions disabled, or the "+
				"__transaction_state topic cannot be created: transaction.state.log.replication.factor above the brokers available?)",
				ErrTransactionsUnavailable, transactionalID, TransactionCoordinatorWait, last)
		}
		if err := Pause(ctx, Backoff(attempt)); err != nil {
			return fmt.Errorf("kafka: find transaction coordinator: %w (after %w)", err, last)
		}
	}
}
