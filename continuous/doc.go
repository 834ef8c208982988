// Package continuous is weir's continuous execution mode: every claimed
// partition is processed record by record in a long-running loop, and every
// epoch interval (weir.WithEpochInterval) an epoch ends — the producer is
// flushed and the consumer offsets of everything processed are committed.
//
// Applications select it through the root package, whose App runs the
// engine; this package holds what the mode reports: the Progress of each
// epoch, as the App's /progress endpoint serves it.
//
//	app, err := weir.New(topo,
//		weir.WithBrokers("localhost:9092"),
//		weir.WithApplicationID("wordcount"),
//		weir.WithMode(weir.Continuous),               // the default
//		weir.WithEpochInterval(100*time.Millisecond), // the default
//		weir.WithGuarantee(weir.ExactlyOnce))         // AtLeastOnce by default
//	err = app.Run(ctx) // until ctx is done
//
// # Guarantees (at-least-once)
//
// Outputs are sent as soon as a record is processed, so they are visible to
// readers within milliseconds. An epoch commits a partition's offset only
// after every output of the records before it — sink records, repartition
// records, changelog records, dead letters — has been acknowledged by all
// in-sync replicas (acks=all, idempotent producer). So no input is ever
// lost; after a crash, the records processed since the last epoch are
// processed again, and their outputs and state changes may appear twice.
// A graceful stop, and the revocation of a partition in a rebalance, end
// the epoch first: outputs and counts stay exact when no process crashes.
//
// # Guarantees (exactly-once)
//
// With WithGuarantee(weir.ExactlyOnce) each epoch is one Kafka transaction
// (package exactlyonce): the outputs, changelog and dead-letter records of
// the epoch and the consumer offsets of its input, with the group metadata
// of the live member (KIP-447), commit together or not at all. Outputs
// become visible to read_committed readers at the epoch's commit, about
// an epoch interval after they were produced. A transaction that fails is
// aborted (or its outcome settled by a new producer epoch), and every task
// rewinds to the committed offsets, its state restored from the committed
// changelog: a read_committed reader sees every output once, crash or not.
package continuous
