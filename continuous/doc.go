// Package continuous is weir's continuous execution mode: every claimed
// partition is processed record by record in a long-running loop, and every
// EpochInterval an epoch ends — the producer is flushed and the consumer
// offsets of everything processed are committed.
//
// Applications select it through the root package:
//
//	app, err := weir.New(topo,
//		weir.WithBrokers("localhost:9092"),
//		weir.WithApplicationID("wordcount"),
//		weir.WithContinuous(100*time.Millisecond))
//	err = app.Run(ctx)
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
// Exactly-once epochs (one Kafka transaction per epoch) arrive with the
// exactly-once engine.
package continuous
