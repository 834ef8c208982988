// Package kafka is weir's adapter around its Kafka client libraries,
// franz-go (the default) and sarama (by name, [Client]): cluster
// administration, an at-least-once producer, the changelog restore reader
// and consumer-group membership with a co-partitioning assignor.
//
// With internal/txn it is the only place that imports a Kafka client. Its
// exported API speaks weir's own types — [Record], [Header], [TopicSpec],
// [GroupMetadata] — whichever client is under it, so the runtime and the
// engines never see a client's value; the single exception is
// [SaramaSession], which tests use to reach sarama's own session type.
//
// # Usage
//
//	cfg := kafka.Config{Brokers: []string{"127.0.0.1:9092"}, ClientID: "app"}
//
//	admin, err := kafka.NewAdmin(cfg)
//	if err != nil { ... }
//	defer admin.Close()
//	err = admin.EnsureTopics(ctx, []kafka.TopicSpec{{Name: "in", Partitions: 4}})
//
//	p, err := kafka.NewProducer(cfg)
//	if err != nil { ... }
//	_ = p.Send(ctx, kafka.Record{Topic: "in", Partition: kafka.PartitionByKey, Key: k, Value: v})
//	err = p.Flush(ctx) // every record sent so far is acknowledged, or the first error
//	_ = p.Close()
//
//	g, err := kafka.NewGroup(kafka.GroupConfig{
//		Config: cfg, GroupID: "app", Topics: []string{"in", "table"},
//		CoPartitioned: [][]string{{"in", "table"}},
//		OnError: func(err error) { log.Print(err) },
//	})
//	err = g.Run(ctx, kafka.HandlerFunc(func(ctx context.Context, c kafka.Claim) error {
//		for r := range c.Records() {
//			process(r)
//			c.MarkOffset(r.Topic, r.Partition, r.Offset+1)
//		}
//		return c.Commit(ctx) // Records closed: revoked or stopping
//	}))
//
// # Protocol version
//
// Every client built here speaks the protocol of one Kafka version, chosen
// in one place ([protocolVersion]). It must be at least 2.5 so that
// TxnOffsetCommit carries the group metadata (KIP-447) and OffsetFetch can
// ask for stable offsets.
package kafka

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// protocolVersion is the Kafka protocol version every sarama client of weir
// is configured with. It is the one place to change it. 2.5 is the minimum
// weir accepts (KIP-447 group metadata in TxnOffsetCommit, RequireStable in
// OffsetFetch); brokers that removed old request versions (Kafka 4.x) only
// need it not to be older than what they still serve.
var protocolVersion = sarama.V2_5_0_0

// SASL mechanisms accepted by [SASL].Mechanism.
const (
	// SASLPlain is SASL/PLAIN: the password travels as is, so use it over TLS.
	SASLPlain = "PLAIN"
	// SASLScramSHA256 is SCRAM-SHA-256 (RFC 7677).
	SASLScramSHA256 = "SCRAM-SHA-256"
	// SASLScramSHA512 is SCRAM-SHA-512.
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Config is what every client of this package needs to reach the cluster.
// The zero value is not usable: Brokers must be set. A Config is a value; it
// is safe to share between goroutines as long as no one mutates it.
type Config struct {
	// Brokers are the bootstrap addresses, host:port.
	Brokers []string
	// ClientID names the client in broker logs and quotas; "weir" if empty.
	ClientID string
	// TLS, when non-nil, enables TLS with this configuration (cloned).
	TLS *tls.Config
	// SASL, when non-nil, enables SASL authentication.
	SASL *SASL
	// Logger receives the adapter's own log lines; slog.Default() if nil.
	// (sarama's internal logger is a process global and is left alone.)
	Logger *slog.Logger
	// Tuning holds the producer and consumer settings users may change;
	// the zero value is weir's defaults.
	Tuning Tuning
	// Client is the client library under the connections; empty means
	// [ResolveClient]'s choice (the environment, then [DefaultClient]).
	Client Client
}

// SASL holds SASL credentials. Mechanism is one of [SASLPlain],
// [SASLScramSHA256] or [SASLScramSHA512].
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string
	// User is the SASL user name.
	User string
	// Password is the user's password.
	Password string
}

// Validate reports whether the SASL settings are complete and the mechanism
// is supported. Errors wrap [ErrConfig].
func (s *SASL) Validate() error {
	if s == nil {
		return nil
	}
	switch s.Mechanism {
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
	default:
		return fmt.Errorf("%w: unsupported SASL mechanism %q (want %s, %s or %s)",
			ErrConfig, s.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
	}
	if s.User == "" {
		return fmt.Errorf("%w: SASL user is empty", ErrConfig)
	}
	if s.Password == "" {
		return fmt.Errorf("%w: SASL password is empty", ErrConfig)
	}
	return nil
}

// Validate reports whether the configuration can be used. Errors wrap
// [ErrConfig].
func (c Config) Validate() error {
	if len(c.Brokers) == 0 {
		return fmt.Errorf("%w: no brokers", ErrConfig)
	}
	for _, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			return fmt.Errorf("%w: empty broker address", ErrConfig)
		}
	}
	if err := c.Tuning.Validate(); err != nil {
		return err
	}
	if _, err := ResolveClient(c.Client); err != nil {
		return err
	}
	return c.SASL.Validate()
}

func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// saramaConfig builds the base sarama configuration shared by the admin,
// the producer and the consumer group; each of them then sets its own part.
func (c Config) saramaConfig() (*sarama.Config, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	sc := sarama.NewConfig()
	sc.Version = protocolVersion
	sc.ClientID = c.ClientID
	if sc.ClientID == "" {
		sc.ClientID = "weir"
	}
	// Topics are created explicitly (Admin.EnsureTopics) with the partition
	// count the topology needs; a metadata request must never create one
	// with the broker's default count behind weir's back.
	sc.Metadata.AllowAutoTopicCreation = false
	sc.Metadata.Retry.Backoff = 100 * time.Millisecond
	sc.Metadata.Retry.Max = 5

	c.ApplySecurity(sc)
	c.ApplyTuning(sc)
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return sc, nil
}

// ApplySecurity sets TLS and SASL in sc from c: the one place where every
// sarama client weir creates — admin, producers, consumer group, and the
// transactional producer of internal/txn — gets its TLS configuration and
// its SASL mechanism, so that SCRAM is this package's client for all of
// them. c must be valid ([Config.Validate]); an unknown mechanism is left
// to sarama's Validate.
func (c Config) ApplySecurity(sc *sarama.Config) {
	if c.TLS != nil {
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = c.TLS.Clone()
	}
	s := c.SASL
	if s == nil {
		return
	}
	sc.Net.SASL.Enable = true
	sc.Net.SASL.Handshake = true
	sc.Net.SASL.User = s.User
	sc.Net.SASL.Password = s.Password
	switch s.Mechanism {
	case SASLPlain:
		sc.Net.SASL.Mechanism = sarama.SASLTypePlaintext
	case SASLScramSHA256:
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA256
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return newSCRAMClient(scramSHA256) }
	case SASLScramSHA512:
		sc.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		sc.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return newSCRAMClient(scramSHA512) }
	default:
		sc.Net.SASL.Mechanism = sarama.SASLMechanism(s.Mechanism)
	}
}

// newClient connects a sarama client with the given configuration.
func newClient(brokers []string, sc *sarama.Config) (sarama.Client, error) {
	client, err := sarama.NewClient(brokers, sc)
	if err != nil {
		return nil, fmt.Errorf("kafka: connect to %v: %w", brokers, err)
	}
	return client, nil
}
