package weir

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirstream/weir/continuous"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/sink"
)

// Option configures an App. New applies the options in order (a later one
// wins), fills the defaults of what is unset (ensureDefaults) and then
// checks the result (validate): every invalid value is reported at once,
// each problem wrapping ErrConfig and naming its option and bound.
type Option func(*config)

// DefaultProgressReports is how many progress reports /progress keeps.
const DefaultProgressReports = 100

// Bounds New enforces on the group timeouts.
const (
	// minSessionTimeout is below Kafka's group.min.session.timeout.ms
	// (6 s by default): the broker enforces its own bound at the join, and
	// the test brokers (embedded, kfake) lower theirs to 1 s for the crash
	// and chaos tests, which run 3 s sessions.
	minSessionTimeout = time.Second
	// maxSessionTimeout is Kafka's default group.max.session.timeout.ms.
	maxSessionTimeout = 30 * time.Minute
	// maxInstanceIDLen is Kafka's bound on group.instance.id (that of a
	// topic name, checked by the Java client).
	maxInstanceIDLen = 249
)

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
	minFreeDisk       int64 // see WithMinFreeDisk
	cacheMaxBytes     int64
	replicas          replicaOptions // options_replicas.go
	httpOn            bool
	httpAddr          string
	httpAdvertise     string
	httpTLS           *tls.Config
	httpTLSSet        bool
	httpAuth          func(*http.Request) error
	httpAuthSet       bool
	progressReports   int
	replication       int16
	topicConfig       map[string]string
	createSinks       *tasks.SinkTopics
	stateListener     func(State, Status)
	kafkaTuning       kafka.Tuning         // options_kafka.go
	kafkaClient       kafka.Client         // options_kafka.go
	sinks             map[string]sink.Sink // outputs.go
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

// WithBrokers sets the bootstrap brokers, host:port (Kafka's
// bootstrap.servers); required, no default. New rejects an empty list and an
// address that is not host:port; an address nobody listens on fails Run
// when it connects.
func WithBrokers(addrs ...string) Option {
	return func(c *config) { c.brokers = append([]string(nil), addrs...) }
}

// WithApplicationID sets the application id (Kafka Streams'
// application.id): the consumer group id, the prefix of internal topics and
// of the transactional id; required, no default. All instances of one
// application use the same id. New rejects an empty id; an id that makes an
// illegal topic name (characters other than [a-zA-Z0-9._-]) fails the
// creation of internal topics at Run.
func WithApplicationID(id string) Option { return func(c *config) { c.applicationID = id } }

// WithClientID sets the Kafka client id (Kafka's client.id), which names
// the client in broker logs and quotas. Default: the application id. Any
// string is accepted.
func WithClientID(id string) Option { return func(c *config) { c.clientID = id } }

// WithStateDir sets the directory for local state — the state stores and
// the write-ahead log among it (Kafka Streams' state.dir). Default: a
// directory under os.TempDir named after the application ("weir-<id>").
// Instances on one machine need one each: a second instance on the same
// directory fails Run on its lock. A directory that cannot be created
// fails Run.
func WithStateDir(dir string) Option { return func(c *config) { c.stateDir = dir } }

// WithMode selects the execution mode: Continuous (the default) or
// MicroBatch. Kafka Streams has only the continuous mode. New rejects any
// other value.
func WithMode(m Mode) Option { return func(c *config) { c.mode = m } }

// WithGuarantee selects the processing guarantee: AtLeastOnce (the
// default) or ExactlyOnce (Kafka Streams' processing.guarantee,
// at_least_once or exactly_once_v2). New rejects any other value.
func WithGuarantee(g Guarantee) Option { return func(c *config) { c.guarantee = g } }

// WithMicroBatch selects the micro-batch mode with the given trigger, limits
// and sinks (see package microbatch; Spark Structured Streaming's triggers,
// no Kafka Streams counterpart). Default: Continuous mode. New rejects what
// microbatch.Config.Validate rejects (an unknown trigger, a ProcessingTime
// interval below 1 ms, negative limits or poll interval).
func WithMicroBatch(cfg microbatch.Config) Option {
	return func(c *config) {
		c.mode = MicroBatch
		c.microBatch = cfg
	}
}

// WithEpochInterval sets the continuous mode's epoch length: how often
// outputs are flushed and offsets committed, one transaction each under
// exactly-once (Kafka Streams' commit.interval.ms). Default 100 ms (Kafka
// Streams' default under exactly-once). New rejects a value below 1 ms,
// zero included. A long epoch delays outputs under exactly-once and stages
// more state in memory (see WithStagingLimit).
func WithEpochInterval(d time.Duration) Option { return func(c *config) { c.epochInterval = d } }

// WithTLS enables TLS with the given configuration (Kafka's
// security.protocol SSL or SASL_SSL with the ssl.* settings). Default: no
// TLS; nil leaves it off. A configuration the brokers refuse fails Run when
// it connects.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// WithSASL enables SASL authentication (Kafka's sasl.mechanism and
// sasl.jaas.config); mechanism is "PLAIN", "SCRAM-SHA-256" or
// "SCRAM-SHA-512". Default: none. New rejects another mechanism and an
// empty user or password; wrong credentials fail Run when it connects.
func WithSASL(mechanism, user, password string) Option {
	return func(c *config) { c.sasl = &sasl{mechanism: mechanism, user: user, password: password} }
}

// WithLogger sets the logger. Default (and for nil): slog.Default(). No
// Kafka Streams counterpart (it logs through SLF4J, set up outside it).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithBadRecordPolicy sets what happens to records that fail
// deserialization or processing: Fail (the default), Skip or DeadLetter
// (Kafka Streams' deserialization.exception.handler and
// processing.exception.handler). New rejects any other value.
func WithBadRecordPolicy(p BadRecordPolicy) Option { return func(c *config) { c.badRecords = p } }

// WithErrorHandler receives the errors the application survives (a failed
// offset commit retried at the next epoch, an aborted transaction rewound
// to the committed offsets, a consumer-group error followed by a rejoin).
// Default (and for nil): they are logged at Error level. Kafka Streams has
// no counterpart (its uncaught exception handler sees fatal errors only).
func WithErrorHandler(fn func(error)) Option { return func(c *config) { c.onError = fn } }

// WithSessionTimeout sets the consumer-group session timeout (Kafka's
// session.timeout.ms): how long a silent instance keeps its partitions
// before the group coordinator removes it and rebalances. Default (and for
// 0): 45 s, Kafka's default. New accepts 1 s to 30 min: the upper bound is
// the broker's default group.max.session.timeout.ms; the lower bound lets
// test brokers with a lowered group.min.session.timeout.ms run short
// sessions, but a default broker refuses anything below 6 s when Run joins
// the group, which then stops with an error (INVALID_SESSION_TIMEOUT).
// Under exactly-once the transaction timeout is the shorter of 10 s and
// half the session timeout.
func WithSessionTimeout(d time.Duration) Option { return func(c *config) { c.sessionTimeout = d } }

// WithHeartbeatInterval sets the consumer-group heartbeat interval (Kafka's
// heartbeat.interval.ms): how often the instance tells the coordinator it
// is alive, and how soon it hears of a rebalance. Default (and for 0): 3 s,
// Kafka's default. New rejects a negative value and one not below the
// session timeout — so a session timeout of 3 s or less needs this option
// too; Kafka recommends at most a third of the session timeout.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(c *config) { c.heartbeatInterval = d }
}

// WithInstanceID makes this instance a static group member (KIP-345,
// Kafka's group.instance.id): a restart within the session timeout
// replaces the old member as soon as it joins, instead of leaving its
// partitions ownerless until the session times out, and the rebalance its
// join starts hands it its partitions back (weir's subscription carries
// the restarted member's state, so its join does rebalance, unlike a
// plain Java consumer's). Default: a dynamic member. Each
// instance needs its own id: a second member with the same id fences the
// first, which stops with an error. New rejects, as the Java client does,
// an id longer than 249 characters or with characters other than
// [a-zA-Z0-9._-].
func WithInstanceID(id string) Option { return func(c *config) { c.instanceID = id } }

// WithStagingLimit bounds the bytes one store of one task may write in one
// epoch or batch before it commits. Default (and for 0): 64 MiB. Kafka
// Streams bounds its record caches instead (statestore.cache.max.bytes).
// The writes of an uncommitted epoch or batch are staged in memory and
// reach the Badger stores only after the Kafka commit; an epoch past the
// limit stops the application with an error wrapping
// statestore.ErrStagingFull — lower the epoch interval or the batch size,
// or raise this limit. New rejects a negative limit.
func WithStagingLimit(bytes int64) Option { return func(c *config) { c.stagingLimit = bytes } }

// WithCacheMaxBytes turns on the record caches of the DSL aggregations
// (Count, Reduce, Aggregate of a grouped stream), sharing bytes bytes per
// instance — Kafka Streams' statestore.cache.max.bytes. Updates of a key
// within one epoch or batch are then coalesced: only the key's latest
// value is forwarded downstream, when the cache evicts it (least recently
// used first, once the caches hold more than bytes) or at the flush right
// before each commit, so exactly-once is unchanged. Default (and for 0):
// off — every update is forwarded as it happens, as Kafka Streams does
// with statestore.cache.max.bytes=0 — so what a topology emits does not
// depend on commit timing or cache size; Kafka Streams' own default is
// 10485760 (10 MiB). See docs/semantics.md (record caches) for what is
// cached. New rejects a negative size, and a positive one with micro-batch
// ForEachBatch (which takes a batch's sink records before the flush).
func WithCacheMaxBytes(bytes int64) Option { return func(c *config) { c.cacheMaxBytes = bytes } }

// WithReplicationFactor sets the replication factor of the topics weir
// creates: repartition, changelog and dead-letter topics (Kafka Streams'
// replication.factor). The default, -1, takes the broker's
// default.replication.factor (KIP-464, Kafka 2.4+). On a production
// cluster use 3, with min.insync.replicas=2 on the broker or through
// WithTopicConfig, so that an internal topic survives a broker failure as
// the input and output topics do. New rejects 0 and values below -1. A
// factor above the brokers registered (INVALID_REPLICATION_FACTOR) is
// asked again for up to a minute, as a restarting broker registers within
// seconds; past that, topic creation fails at Run with an error that says
// so. Existing topics are not changed.
func WithReplicationFactor(n int16) Option { return func(c *config) { c.replication = n } }

// WithTopicConfig sets a topic config (such as "min.insync.replicas" or
// "retention.ms") on the topics weir creates: repartition, changelog and
// dead-letter topics (Kafka Streams' "topic." prefixed settings). Default:
// the broker's. It may be given more than once. A changelog is always
// created with cleanup.policy=compact, which New therefore refuses to
// override; New also rejects an empty key; the broker checks the rest at
// topic creation, which then fails Run. Existing topics are not changed.
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
// at the first record. New rejects a partition count below 1 and an empty
// config key; the broker checks the configs at topic creation. Existing
// topics are not changed.
func WithCreateSinkTopics(partitions int32, topicConfig map[string]string) Option {
	return func(c *config) {
		c.createSinks = &tasks.SinkTopics{Partitions: partitions, Config: maps.Clone(topicConfig)}
	}
}

// WithHTTP serves the instance's HTTP endpoints on addr while Run runs:
// interactive queries of the state stores, /healthz, /readyz, /metrics and
// /progress (see the README; Kafka Streams' application.server, without
// the server, which it leaves to the application). Default: no HTTP
// server. A host left empty binds to the loopback interface only (":8080"
// listens on 127.0.0.1:8080); name the interface, or 0.0.0.0, to serve
// others. Port 0 picks a free port (HTTPAddr tells which). New rejects an
// address that is not host:port; one that cannot be bound (a port in use)
// fails Run.
//
// Every instance advertises its address in its consumer-group membership,
// so any instance answers any key, forwarding to the instance that runs
// its partition.
func WithHTTP(addr string) Option { return func(c *config) { c.httpAddr = addr; c.httpOn = true } }

// WithAdvertisedHTTP sets the host:port other instances forward queries to
// (Kafka Streams' application.server). Default: the address WithHTTP
// listens on, or this host's name with its port when that is an
// unspecified address such as 0.0.0.0. It matters only with WithHTTP. It
// may carry the scheme ("https://host:port"), which must then match
// WithHTTPTLS: with TLS the instance advertises https://host:port. New
// rejects a value that is not host:port with both parts, another scheme,
// and http:// with WithHTTPTLS or https:// without it; an address the
// other instances cannot reach makes their forwarded queries fail.
func WithAdvertisedHTTP(hostport string) Option {
	return func(c *config) { c.httpAdvertise = hostport }
}

// WithHTTPTLS serves the HTTP endpoints of WithHTTP over TLS (HTTPS) with
// cfg, cloned; plain HTTP to them is refused (400). Default: plain HTTP.
// cfg.Certificates (or GetCertificate) is the instance's server
// certificate: it must be valid for the host the instance advertises
// (WithAdvertisedHTTP; an IP address needs an IP SAN). For mutual TLS set
// ClientAuth to tls.RequireAndVerifyClientCert (or
// VerifyClientCertIfGiven) and ClientCAs to the CA of the clients'
// certificates. Forwarding between instances uses the same TLS: the
// instances advertise https://host:port, and the forwarding client trusts
// cfg.RootCAs (the system pool when nil) and presents cfg.Certificates as
// its client certificate (which then needs the clientAuth extended key
// usage too). Every instance of the application must set it. No Kafka
// Streams counterpart (it leaves the server to the application). New
// rejects a nil cfg, a cfg without WithHTTP, without a certificate,
// verifying client certificates without ClientCAs, asking for them
// without verifying them (RequestClientCert, RequireAnyClientCert, unless
// VerifyPeerCertificate is set), and requiring them with no certificate
// for forwarding to present.
func WithHTTPTLS(cfg *tls.Config) Option {
	return func(c *config) { c.httpTLS, c.httpTLSSet = cfg, true }
}

// WithHTTPAuth authenticates every request to the HTTP endpoints of
// WithHTTP — queries, /metrics, /progress, /healthz and /readyz — with
// auth before it is served: nil admits it; an error refuses it with 401
// Unauthorized, or 403 Forbidden when the error wraps ErrHTTPForbidden,
// and a JSON body {"error": ...} with the error's text; a refused request
// never reaches a store. The request's TLS state (r.TLS, its
// PeerCertificates under mutual TLS) and headers are there to decide on;
// to leave health probes open, admit their paths. A query forwarded
// between instances is authenticated on both: the forwarded request
// carries the original's Authorization header and, under mutual TLS, the
// forwarding instance's certificate. Default: no authentication. No Kafka
// Streams counterpart. New rejects a nil auth and one without WithHTTP.
func WithHTTPAuth(auth func(r *http.Request) error) Option {
	return func(c *config) { c.httpAuth, c.httpAuthSet = auth, true }
}

// WithProgressReports sets how many progress reports (epochs or batches)
// /progress keeps. Default (and for 0): DefaultProgressReports. No Kafka
// Streams counterpart. New rejects a negative count.
func WithProgressReports(n int) Option { return func(c *config) { c.progressReports = n } }

// WithStateListener calls fn on every change of state, with the state
// left and the new status (Kafka Streams' KafkaStreams.setStateListener);
// fn runs on the goroutine that changed it, in order, and must return
// quickly. It also sees the changes to Starting at the start of every Run
// and to Stopped or Failed at its end. Default (and for nil): no listener.
func WithStateListener(fn func(from State, to Status)) Option {
	return func(c *config) { c.stateListener = fn }
}

// newConfig returns the configuration before the options: the defaults
// whose zero value is invalid, so that an option setting zero is rejected.
func newConfig() config {
	return config{epochInterval: continuous.DefaultEpochInterval, replication: -1}
}

// ensureDefaults fills what the options left unset (zero, or nil); it
// keeps negative values for validate to reject.
func (c *config) ensureDefaults() {
	if c.sessionTimeout == 0 {
		c.sessionTimeout = kafka.DefaultSessionTimeout
	}
	if c.heartbeatInterval == 0 {
		c.heartbeatInterval = kafka.DefaultHeartbeatInterval
	}
	if c.stagingLimit == 0 {
		c.stagingLimit = tasks.DefaultStagingLimit
	}
	if c.progressReports == 0 {
		c.progressReports = DefaultProgressReports
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.clientID == "" {
		c.clientID = c.applicationID
	}
	if c.stateDir == "" {
		c.stateDir = filepath.Join(os.TempDir(), "weir-"+c.applicationID)
	}
	if c.clock == nil {
		c.clock = time.Now
	}
}

// validate reports every problem of c at once (after ensureDefaults), each
// wrapping ErrConfig and naming its option and bound.
func (c *config) validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...))
	}
	if len(c.brokers) == 0 {
		bad("WithBrokers: no brokers (required)")
	}
	for _, b := range c.brokers {
		if strings.TrimSpace(b) == "" {
			bad("WithBrokers: empty broker address")
		} else if _, _, err := net.SplitHostPort(b); err != nil {
			bad("WithBrokers: %q is not host:port: %v", b, err)
		}
	}
	if c.applicationID == "" {
		bad("WithApplicationID: no application id (required)")
	}
	if c.mode != Continuous && c.mode != MicroBatch {
		bad("WithMode: unknown mode %d (Continuous or MicroBatch)", int(c.mode))
	}
	if c.guarantee != AtLeastOnce && c.guarantee != ExactlyOnce {
		bad("WithGuarantee: unknown guarantee %d (AtLeastOnce or ExactlyOnce)", int(c.guarantee))
	}
	if c.mode == MicroBatch {
		if err := c.microBatch.Validate(); err != nil {
			bad("WithMicroBatch: %w", err)
		}
	}
	if c.epochInterval < time.Millisecond {
		bad("WithEpochInterval: %v is below 1ms", c.epochInterval)
	}
	if c.sasl != nil {
		s := kafka.SASL{Mechanism: c.sasl.mechanism, User: c.sasl.user, Password: c.sasl.password}
		if err := s.Validate(); err != nil {
			bad("WithSASL: %w", err)
		}
	}
	if c.badRecords < Fail || c.badRecords > DeadLetter {
		bad("WithBadRecordPolicy: unknown policy %d (Fail, Skip or DeadLetter)", int(c.badRecords))
	}
	sessionOK := c.sessionTimeout >= minSessionTimeout && c.sessionTimeout <= maxSessionTimeout
	if !sessionOK {
		bad("WithSessionTimeout: %v is not within %v and %v", c.sessionTimeout, minSessionTimeout, maxSessionTimeout)
	}
	switch {
	case c.heartbeatInterval < 0:
		bad("WithHeartbeatInterval: %v is negative", c.heartbeatInterval)
	case !sessionOK:
		// Compared with an invalid session timeout it would repeat that
		// problem.
	case c.heartbeatInterval >= c.sessionTimeout && c.heartbeatInterval == kafka.DefaultHeartbeatInterval:
		bad("WithHeartbeatInterval: the default %v is not below the session timeout %v (WithSessionTimeout); set one below it",
			c.heartbeatInterval, c.sessionTimeout)
	case c.heartbeatInterval >= c.sessionTimeout:
		bad("WithHeartbeatInterval: %v is not below the session timeout %v (WithSessionTimeout)", c.heartbeatInterval, c.sessionTimeout)
	}
	if c.instanceID != "" {
		if len(c.instanceID) > maxInstanceIDLen {
			bad("WithInstanceID: %d characters, more than %d", len(c.instanceID), maxInstanceIDLen)
		}
		if i := strings.IndexFunc(c.instanceID, func(r rune) bool { return !legalNameRune(r) }); i >= 0 {
			bad("WithInstanceID: %q has %q, not one of [a-zA-Z0-9._-]", c.instanceID, c.instanceID[i:i+1])
		}
	}
	if c.stagingLimit < 0 {
		bad("WithStagingLimit: %d is negative (0 for the default, 64 MiB)", c.stagingLimit)
	}
	if c.cacheMaxBytes < 0 {
		bad("WithCacheMaxBytes: %d is negative (0 turns the record caches off)", c.cacheMaxBytes)
	}
	if c.cacheMaxBytes > 0 && c.mode == MicroBatch && c.microBatch.ForEachBatch != nil {
		// The caches flush in the commit, after ForEachBatch has taken the
		// batch's sink records: the flushed ones would reach the next call.
		bad("WithCacheMaxBytes: record caches do not work with micro-batch ForEachBatch (the flush comes after it)")
	}
	if c.replication == 0 || c.replication < -1 {
		bad("WithReplicationFactor: %d is neither -1 (the broker's default) nor 1 or more", c.replication)
	}
	for k := range c.topicConfig {
		if k == "" || k == "cleanup.policy" {
			bad("WithTopicConfig: topic config %q (not empty; weir sets cleanup.policy itself)", k)
		}
	}
	if c.createSinks != nil {
		if c.createSinks.Partitions < 1 {
			bad("WithCreateSinkTopics: %d partitions is below 1", c.createSinks.Partitions)
		}
		if _, ok := c.createSinks.Config[""]; ok {
			bad("WithCreateSinkTopics: empty topic config key")
		}
	}
	c.validateHTTP(bad)
	if c.progressReports < 0 {
		bad("WithProgressReports: %d is negative (0 for the default, %d)", c.progressReports, DefaultProgressReports)
	}
	c.validateKafka(bad)
	c.validateReplicas(bad)
	return errors.Join(errs...)
}

// legalNameRune reports whether r may appear in a Kafka topic name or
// group.instance.id.
func legalNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// WithMinFreeDisk sets the free space, in bytes, the state dir's volume
// must keep: below it the instance stops taking work — continuous mode
// holds its claims and ends no epoch, micro-batch mode plans no batch —
// reports itself Retrying (/readyz 503, its error wrapping "disk full"),
// and resumes by itself once the free space is back above it. It is
// checked before each epoch end and each batch, which are what write to
// Badger. Default (and for 0): 256 MiB, twice what Badger may write or
// map at once for the stores (a memtable flushed to a table, the next
// memtable's file, a value-log file; see docs/design.md): Badger writes
// tables through memory maps, and a map past the end of a full volume
// ends the process (SIGBUS) instead of failing a write. A negative value
// turns the check off. Kafka Streams has no counterpart: RocksDB fails
// its writes with an error instead.
func WithMinFreeDisk(bytes int64) Option { return func(c *config) { c.minFreeDisk = bytes } }
