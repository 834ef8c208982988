// Package exactlyonce is the transactional producer session weir's engines
// use (they run its implementation, internal/txn, directly; this package is
// its public API) for end-to-end exactly-once Kafka→Kafka: the records an epoch or a
// batch produces (outputs, changelog records, dead letters) and the
// consumer offsets of its input commit in one Kafka transaction, or not at
// all.
//
// It is usable on its own, by any program that consumes with a Kafka
// consumer group and produces transactionally (Kafka's consume-transform-
// produce loop). It wraps sarama's transactional AsyncProducer — none of
// whose types appear in this API — and adds what sarama leaves to its user: waiting for every record before committing (no failure
// dropped), offsets committed even when nothing was produced, a context on
// every blocking call, errors classified into what the engine must do, and
// a new producer epoch after any connection failure so that a delayed
// request cannot land in a later transaction.
//
// # Usage
//
//	id, err := exactlyonce.LoadOrCreateInstanceID(stateDir)
//	if err != nil { ... }
//	s, err := exactlyonce.New(ctx, exactlyonce.Config{
//		Brokers:         brokers,
//		TransactionalID: app + "-" + id,
//		SessionTimeout:  groupSessionTimeout, // TransactionTimeout must be below it
//	})
//	if err != nil { ... }
//	defer s.Close()
//
//	for { // one epoch or batch
//		if err := s.Begin(ctx); err != nil { ... }
//		for _, r := range outputs {
//			if err := s.Send(ctx, r); err != nil { ... } // may run on many goroutines
//		}
//		offsets := map[exactlyonce.TopicPartition]int64{{Topic: "in", Partition: 0}: next}
//		gm := exactlyonce.GroupMetadata{GroupID: group, GenerationID: gen, MemberID: member} // the live member's
//		switch err := s.Commit(ctx, offsets, gm); {
//		case err == nil:
//			// apply staged state, log the epoch
//		case errors.Is(err, exactlyonce.ErrAbortable):
//			err = s.Abort(ctx) // then rewind every task to its committed offset, drop staged state
//		case errors.Is(err, exactlyonce.ErrFenced):
//			// drop staged state, rejoin the group, then s.Reset(ctx)
//		case errors.Is(err, exactlyonce.ErrIndefinite):
//			// s.Reset(ctx), re-read the stable committed offsets: the epoch
//			// committed iff they moved to its end; drop staged state otherwise
//		default: // ErrFatal: stop
//		}
//	}
//
// # The protocol, and why each step
//
//   - One transactional id per instance, "<application>-<instance id>",
//     the instance id persisted in the state directory
//     ([LoadOrCreateInstanceID]): a restart re-initializes the same id,
//     which fences its own zombie. New and Reset send InitProducerId.
//   - Idempotent producer, acks=all, one request in flight per connection:
//     sarama's retries neither duplicate nor reorder.
//   - TransactionTimeout below the group session timeout, checked by New.
//   - Commit always sends the offsets with the member's group metadata
//     (generation, member id, instance id: KIP-447, TxnOffsetCommit v3),
//     also for a transaction without records (sarama >= v1.61.1 sends
//     offsets-only transactions; older versions dropped them silently).
//   - Errors are classified by Kafka error code, sarama's transaction
//     status flags and Go error types, never by message text: see
//     [ErrAbortable], [ErrFenced], [ErrIndefinite], [ErrFatal].
//   - An indefinite outcome is never retried as a commit: Reset bumps the
//     epoch, which decides the outcome, and the engine reads it back from
//     the stable committed offsets.
//   - Delayed requests. sarama retries EndTxn and TxnOffsetCommit after a
//     network error on a new connection; the first copy may still reach
//     the broker. Without KIP-890 (not in sarama) such a copy, carrying the
//     current epoch, would apply to the next transaction — commit it half
//     done, or commit stale offsets into it (Jepsen found this in Kafka).
//     The session dials its own connections and notices every one that
//     fails in use; after a transaction during which one did, the next
//     Begin re-initializes the producer first, so the copy is fenced by
//     the new epoch. A commit that sarama completed after a retry is still
//     reported as committed: the broker said so.
//
// # Concurrency
//
// A [Session] runs one transaction at a time. Begin, Commit, Abort, Reset
// and Close belong to one goroutine (they are serialized if not); Send may
// be called from many goroutines between Begin and Commit.
//
// # Protocol version
//
// The producer speaks Kafka 4.3.1's protocol as sarama v1.61.1 knows it
// (Kafka 4.4 and kfake serve it); at least 2.5 is needed for the group
// metadata in TxnOffsetCommit.
package exactlyonce
