package weir

import (
	"crypto/tls"
	"log/slog"
	"maps"
	"time"

	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/microbatch"
)

// Option configures an App.
type Option func(*config)

type config struct {
	brokers           []string
	applicationID     string
	clientID          string
	stateDir          string
	mode              Mode
	guarantee         Guarantee
	epochInterval     time.Duration
	tls               *tls.Config
	sasl              *sasl
	logger            *slog.Logger
	badRecords        BadRecordPolicy
	onError           func(error)
	sessionTimeout    time.Duration
	heartbeatInterval time.Duration
	instanceID        string
	clock             func() time.Time
	microBatch        microbatch.Config
	stagingLimit      int64
	standbys          bool
	httpOn            bool
	httpAddr          string
	httpAdvertise     string
	progressReports   int
	replication       int16
	topicConfig       map[string]string
	createSinks       *runtime.SinkTopics
	stateListener     func(State, Status)
}

type sasl struct{ mechanism, user, password string }

// Mode is an execution mode.
type Mode int

const (
	// Continuous processes records one at a time as they arrive, with
	// epochs every EpochInterval (the default mode).
	Continuous Mode = iota
	// MicroBatch processes planned offset ranges in batches.
	MicroBatch
)

// String names the mode.
func (m Mode) String() string {
	if m == MicroBatch {
		return "micro-batch"
	}
	return "continuous"
}

// Guarantee is a processing guarantee.
type Guarantee int

const (
	// AtLeastOnce never loses a record; a crash may repeat outputs.
	AtLeastOnce Guarantee = iota
	// ExactlyOnce makes every record's outputs, state changes and offset
	// commit one Kafka transaction.
	ExactlyOnce
)

// String names the guarantee.
func (g Guarantee) String() string {
	if g == ExactlyOnce {
		return "exactly-once"
	}
	return "at-least-once"
}

// BadRecordPolicy says what happens to records that fail deserialization or
// processing.
type BadRecordPolicy = runtime.BadRecordPolicy

// The bad-record policies.
const (
	// Fail stops the application, naming the record.
	Fail = runtime.Fail
	// Skip logs and counts the record and goes on.
	Skip = runtime.Skip
	// DeadLetter writes the record to "<topic>-dlq" and goes on.
	DeadLetter = runtime.DeadLetter
)

// WithBrokers sets the bootstrap brokers (host:port); required.
func WithBrokers(addrs ...string) Option {
	return func(c *config) { c.brokers = append([]string(nil), addrs...) }
}

// WithApplicationID sets the application id: the consumer group id and the
// prefix of internal topics; required. All instances of one application
// use the same id.
func WithApplicationID(id string) Option { return func(c *config) { c.applicationID = id } }

// WithClientID sets the Kafka client id (default: the application id).
func WithClientID(id string) Option { return func(c *config) { c.clientID = id } }

// WithStateDir sets the directory for local state — the micro-batch
// write-ahead log among it (default: a directory under os.TempDir named
// after the application). Instances on one machine need one each.
func WithStateDir(dir string) Option { return func(c *config) { c.stateDir = dir } }

// WithMode selects the execution mode (default Continuous).
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithGuarantee selects the processing guarantee (default AtLeastOnce).
func WithGuarantee(g Guarantee) Option { return func(c *config) { c.guarantee = g } }

// WithMicroBatch selects the micro-batch mode with the given trigger, limits
// and sinks (see package microbatch).
func WithMicroBatch(cfg microbatch.Config) Option {
	return func(c *config) {
		c.mode = MicroBatch
		c.microBatch = cfg
	}
}

// WithEpochInterval sets the continuous mode's epoch length (default
// 100 ms).
func WithEpochInterval(d time.Duration) Option { return func(c *config) { c.epochInterval = d } }

// WithTLS enables TLS with the given configuration.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithSASL enables SASL authentication; mechanism is "PLAIN",
// "SCRAM-SHA-256" or "SCRAM-SHA-512".
func WithSASL(mechanism, user, password string) Option {
	return func(c *config) { c.sasl = &sasl{mechanism: mechanism, user: user, password: password} }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithBadRecordPolicy sets what happens to bad records (default Fail).
func WithBadRecordPolicy(p BadRecordPolicy) Option { return func(c *config) { c.badRecords = p } }

// WithErrorHandler receives the errors the application survives (a failed
// offset commit retried at the next epoch, an aborted transaction rewound
// to the committed offsets, a consumer-group error followed by a rejoin). By default they are logged.
func WithErrorHandler(fn func(error)) Option { return func(c *config) { c.onError = fn } }

// WithSessionTimeout sets the consumer-group session timeout (Kafka's
// default, 45 s, when unset): how long a silent instance keeps its
// partitions.
func WithSessionTimeout(d time.Duration) Option { return func(c *config) { c.sessionTimeout = d } }

// WithHeartbeatInterval sets the consumer-group heartbeat interval (3 s by
// default); keep it well below the session timeout.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(c *config) { c.heartbeatInterval = d }
}

// WithInstanceID makes this instance a static group member (KIP-345): a
// restart within the session timeout keeps its partitions without a
// rebalance. Each instance needs its own id.
func WithInstanceID(id string) Option { return func(c *config) { c.instanceID = id } }

// WithStagingLimit bounds the bytes one store of one task may write in one
// epoch or batch before it commits (64 MiB by default). The writes of an
// uncommitted epoch or batch are staged in memory and reach the Badger
// stores only after the Kafka commit; an epoch past the limit stops the
// application with an error wrapping statestore.ErrStagingFull — lower the
// epoch interval or the batch size, or raise this limit.
func WithStagingLimit(bytes int64) Option { return func(c *config) { c.stagingLimit = bytes } }

// WithStandbyReplicas makes this instance a warm standby of every state
// store partition it does not run: it keeps their Badger rows caught up
// with their changelogs (every second), so when one of those tasks moves
// here — a rebalance, another instance's crash — its restore replays only
// the last changes instead of the whole changelog. It costs the reads of
// every changelog and the disk for every store.
func WithStandbyReplicas() Option { return func(c *config) { c.standbys = true } }

// WithReplicationFactor sets the replication factor of the topics weir
// creates: repartition, changelog and dead-letter topics (Kafka Streams'
// replication.factor). The default, -1, takes the broker's
// default.replication.factor (KIP-464, Kafka 2.4+). On a production
// cluster use 3, with min.insync.replicas=2 on the broker or through
// WithTopicConfig, so that an internal topic survives a broker failure as
// the input and output topics do. New rejects 0 and values below -1; a
// factor above the cluster's broker count fails topic creation at Run
// (INVALID_REPLICATION_FACTOR). Existing topics are not changed.
func WithReplicationFactor(n int16) Option { return func(c *config) { c.replication = n } }

// WithTopicConfig sets a topic config (such as "min.insync.replicas" or
// "retention.ms") on the topics weir creates: repartition, changelog and
// dead-letter topics (Kafka Streams' "topic." prefixed settings). It may be
// given more than once. A changelog is always created with
// cleanup.policy=compact, which New therefore refuses to override; the
// broker checks the rest at topic creation. Existing topics are not
// changed.
func WithTopicConfig(key, value string) Option {
	return func(c *config) {
		if c.topicConfig == nil {
			c.topicConfig = map[string]string{}
		}
		c.topicConfig[key] = value
	}
}

// WithCreateSinkTopics makes Run create a sink topic that does not exist
// with the given partition count and topic configs (nil for the broker's
// defaults) and the replication factor of WithReplicationFactor, as Kafka
// Streams never does. By default a missing sink topic stops Run before it
// joins the group, with an error naming the topic: a typo in a topic name,
// or a cluster that creates no topics on its own, is found at start, not
// at the first record. New rejects a partition count below 1. Existing
// topics are not changed.
func WithCreateSinkTopics(partitions int32, topicConfig map[string]string) Option {
	return func(c *config) {
		c.createSinks = &runtime.SinkTopics{Partitions: partitions, Config: maps.Clone(topicConfig)}
	}
}
