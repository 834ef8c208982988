package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
)

// TestPublicErrors checks that no error of the Kafka client or of an
// internal package reaches a caller, and that what a caller may match
// still matches: the kind, the Kafka error code, the failed record's
// partition, context errors.
func TestPublicErrors(t *testing.T) {
	record := &kafka.PartitionError{Topic: "out", Partition: 3, Err: sarama.ErrNotEnoughReplicas}
	for _, tc := range []struct {
		name string
		in   error
		code int16 // 0: no KafkaError
		rec  bool
		is   []error
	}{
		{name: "broker error", in: &txn.Error{Op: "commit", Kind: txn.ErrFenced, Err: sarama.ErrProducerFenced},
			code: int16(sarama.ErrProducerFenced), is: []error{ErrFenced}},
		{name: "failed records", in: &txn.Error{Op: "commit", Kind: txn.ErrAbortable, Err: fmt.Errorf("%w (and 2 more failed records)", record)},
			code: int16(sarama.ErrNotEnoughReplicas), rec: true, is: []error{ErrAbortable}},
		{name: "ctx after a broker error", in: &txn.Error{Op: "init", Kind: txn.ErrIndefinite, Err: fmt.Errorf("%w (after %w)", context.DeadlineExceeded, sarama.ErrConcurrentTransactions)},
			code: int16(sarama.ErrConcurrentTransactions), is: []error{ErrIndefinite, context.DeadlineExceeded}},
		{name: "sarama's configuration error", in: fmt.Errorf("%w: %w", txn.ErrConfig, sarama.ConfigurationError("bad")),
			is: []error{ErrConfig}},
		{name: "usage error", in: txn.ErrNoTransaction, is: []error{ErrNoTransaction}},
		{name: "ctx", in: fmt.Errorf("exactlyonce: abort: %w", context.Canceled), is: []error{context.Canceled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := public(tc.in)
			require.Equal(t, tc.in.Error(), got.Error(), "the message is kept")
			walk(got, func(e error) {
				p := reflect.TypeOf(e).String()
				require.False(t, strings.Contains(p, "sarama") || strings.HasPrefix(p, "*txn.") || strings.HasPrefix(p, "*kafka."),
					"%s (%v) reaches the caller", p, e)
			})
			for _, target := range tc.is {
				require.ErrorIs(t, got, target)
			}
			var ke *KafkaError
			require.Equal(t, tc.code != 0, errors.As(got, &ke))
			if ke != nil {
				require.Equal(t, tc.code, ke.Code)
			}
			var re *RecordError
			require.Equal(t, tc.rec, errors.As(got, &re))
			if re != nil {
				require.Equal(t, "out-3", TopicPartition{re.Topic, re.Partition}.String())
			}
			if _, ok := tc.in.(*txn.Error); ok {
				var e *Error
				require.ErrorAs(t, got, &e)
			}
		})
	}
	require.NoError(t, public(nil))
}

// walk calls fn on every error in err's tree.
func walk(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walk(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, fn)
		}
	}
}

// TestConfigInternal checks the conversion of a Config.
func TestConfigInternal(t *testing.T) {
	c := Config{Brokers: []string{"b:9092"}, ClientID: "c", TransactionalID: "app-1", SASL: &SASL{User: "u", Password: "p"}}
	require.NoError(t, c.Validate())
	ic := c.internal()
	require.Equal(t, kafka.SASLPlain, ic.Kafka.SASL.Mechanism)
	require.Equal(t, []string{"b:9092"}, ic.Kafka.Brokers)

	c.SASL.Mechanism = "SCRAM-SHA-512"
	require.NoError(t, c.Validate())
	c.SASL.Mechanism = "GSSAPI"
	require.ErrorIs(t, c.Validate(), ErrConfig)
	require.ErrorIs(t, Config{Brokers: []string{"b:9092"}}.Validate(), ErrConfig, "no transactional id")
	require.ErrorIs(t, Config{TransactionalID: "x"}.Validate(), ErrConfig, "no brokers")
}

// TestSameDefaults checks that the constants spelled out here are the ones
// package txn and internal/kafka apply.
func TestSameDefaults(t *testing.T) {
	require.Equal(t, txn.DefaultSessionTimeout, DefaultSessionTimeout)
	require.Equal(t, txn.DefaultTransactionTimeout, DefaultTransactionTimeout)
	require.Equal(t, txn.DefaultRequestTimeout, DefaultRequestTimeout)
	require.Equal(t, kafka.PartitionByKey, PartitionByKey)
}
