package kafka

import "errors"

// ErrConfig is wrapped by every error that reports an invalid configuration.
var ErrConfig = errors.New("kafka: invalid configuration")

// ErrUnknownTopic is wrapped by errors about a topic the cluster does not
// have.
var ErrUnknownTopic = errors.New("kafka: unknown topic")

// ErrPartitionMismatch is wrapped by the error [Admin.EnsureTopics] returns
// when an existing topic has another partition count than the one asked.
var ErrPartitionMismatch = errors.New("kafka: partition count mismatch")

// ErrClosed is returned by operations on a closed Admin, Producer or Group.
var ErrClosed = errors.New("kafka: closed")

// ErrRunning is returned by [Group.Run] when the group is already running.
var ErrRunning = errors.New("kafka: group already running")

// ErrTransactionsUnavailable is wrapped by [Admin.CheckTransactions]'s
// errors: the cluster cannot run exactly-once — its brokers are too old, or
// no transaction coordinator answers, or the application may not use its
// transactional id.
var ErrTransactionsUnavailable = errors.New("kafka: transactions unavailable")

// ErrRecordTooLarge is wrapped by the error for a record larger than
// [MaxRecordBytes]: no producer would deliver it, and under exactly-once
// it would fail the whole transaction.
var ErrRecordTooLarge = errors.New("kafka: record too large")

// ErrSCRAM is wrapped by every error of the SCRAM exchange.
var ErrSCRAM = errors.New("kafka: scram")

// ErrInvalidPartition is wrapped by the delivery error of a record sent to
// an explicit partition its topic does not have, on either client.
var ErrInvalidPartition = errors.New("kafka: invalid partition")

// errIncompleteFetch is a Fetch response that does not answer for the
// partition asked (franz-go's ReadRange): retried, as sarama's
// ErrIncompleteResponse is.
var errIncompleteFetch = errors.New("kafka: incomplete fetch response")

// errHalted is deliver's cause for a record not handed to a claim that is
// ending; it never leaves the package.
var errHalted = errors.New("kafka: claim halted")
