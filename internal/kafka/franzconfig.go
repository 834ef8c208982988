package kafka

import (
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// FranzOpts returns the franz-go (kgo) options every franz-go client of
// cfg shares: the bootstrap brokers, the client id, TLS and SASL. Each
// client appends its own part (the consumer group its group, fetch and
// isolation settings). cfg is validated first; errors wrap [ErrConfig].
func FranzOpts(cfg Config) ([]kgo.Opt, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	id := cfg.ClientID
	if id == "" {
		id = "weir"
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID(id)}
	if cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg.TLS.Clone()))
	}
	if s := cfg.SASL; s != nil {
		switch s.Mechanism {
		case SASLPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()))
		case SASLScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()))
		case SASLScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()))
		}
	}
	return opts, nil
}
