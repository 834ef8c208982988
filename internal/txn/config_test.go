package txn_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
)

func TestConfigValidate(t *testing.T) {
	ok := txn.Config{
		Kafka:           kafka.Config{Brokers: []string{"127.0.0.1:1"}},
		TransactionalID: "app-1",
	}
	require.NoError(t, ok.Validate())

	for name, tc := range map[string]struct {
		mod  func(*txn.Config)
		want string
	}{
		"empty id":             {func(c *txn.Config) { c.TransactionalID = "" }, "empty transactional id"},
		"no brokers":           {func(c *txn.Config) { c.Kafka.Brokers = nil }, "no brokers"},
		"timeout = session":    {func(c *txn.Config) { c.TransactionTimeout, c.SessionTimeout = 10*time.Second, 10*time.Second }, "not below"},
		"timeout > session":    {func(c *txn.Config) { c.TransactionTimeout = time.Minute }, "not below"}, // default session 45 s
		"negative timeout":     {func(c *txn.Config) { c.RequestTimeout = -time.Second }, "negative"},
		"tiny timeout":         {func(c *txn.Config) { c.TransactionTimeout = time.Microsecond }, "out of range"},
		"tiny request timeout": {func(c *txn.Config) { c.RequestTimeout = time.Millisecond }, "request timeout"},
		"scram": {func(c *txn.Config) {
			c.Kafka.SASL = &kafka.SASL{Mechanism: kafka.SASLScramSHA256, User: "u", Password: "p"}
		}, "not supported"},
		"bad sasl": {func(c *txn.Config) { c.Kafka.SASL = &kafka.SASL{Mechanism: kafka.SASLPlain} }, "user"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			err := cfg.Validate()
			require.ErrorIs(t, err, txn.ErrConfig)
			require.ErrorContains(t, err, tc.want)
			_, err = txn.New(t.Context(), cfg)
			require.ErrorIs(t, err, txn.ErrConfig)
		})
	}

	// The default transaction timeout fits a short session timeout.
	short := ok
	short.SessionTimeout = 6 * time.Second
	require.NoError(t, short.Validate())
	plain := ok
	plain.Kafka.SASL = &kafka.SASL{Mechanism: kafka.SASLPlain, User: "u", Password: "p"}
	require.NoError(t, plain.Validate())
}
