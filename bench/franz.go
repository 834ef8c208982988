package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
)

// The franz-go rows: the same copy as the sarama ceilings, with
// github.com/twmb/franz-go's kgo client — the "Go limit" on this machine.
// kgo lives in the bench module only; the library keeps sarama.
//
// A "-lz4" suffix on any copier row (franz-*, ceiling-*-tuned) and on the
// weir rows (weir.WithCompression) compresses the produced batches with
// lz4; without it nothing is compressed (kgo's own default is snappy,
// sarama's and weir's none).
const (
	sysFranzALO         = "franz-alo"
	sysFranzEOS         = "franz-eos"
	sysCeilingALOTuned  = "ceiling-alo-tuned"
	sysCeilingEOSTuned  = "ceiling-eos-tuned"
	lz4Suffix           = "-lz4"
	franzEpoch          = 100 * time.Millisecond
	franzTxnTimeout     = 10 * time.Second
	franzProduceLogOnce = 5
)

// isCopier reports whether sys copies its input unchanged (every record
// reaches the output) rather than running the stateless filter + map.
func isCopier(sys string) bool {
	base := strings.TrimSuffix(sys, lz4Suffix)
	return strings.HasPrefix(base, "ceiling-") || strings.HasPrefix(base, "franz-")
}

// extraChild returns the child function of the franz-go rows, the tuned
// sarama ceilings and weir with lz4, or nil for the others.
func extraChild(sys string) func(context.Context, childArgs) error {
	lz4 := strings.HasSuffix(sys, lz4Suffix)
	switch strings.TrimSuffix(sys, lz4Suffix) {
	case sysFranzALO:
		return func(ctx context.Context, a childArgs) error { return franzALO(ctx, a, lz4) }
	case sysFranzEOS:
		return func(ctx context.Context, a childArgs) error { return franzEOS(ctx, a, lz4) }
	case sysCeilingALOTuned:
		return func(ctx context.Context, a childArgs) error { return ceilingALOTuned(ctx, a, lz4) }
	case sysCeilingEOSTuned:
		return func(ctx context.Context, a childArgs) error { return ceilingEOSTuned(ctx, a, lz4) }
	case sysWeirALO, sysWeirEOS, sysWeirMB:
		if lz4 {
			return func(ctx context.Context, a childArgs) error {
				a.system = strings.TrimSuffix(a.system, lz4Suffix)
				return runWeir(ctx, a, weir.WithCompression(weir.CompressionLZ4))
			}
		}
	}
	return nil
}

// franzOpts are the options both franz-go copiers share: kgo's defaults
// except the compression (none, or lz4) and the manual partitioner (the
// copy keeps each record's partition, like the sarama ceilings).
func franzOpts(a childArgs, lz4 bool) []kgo.Opt {
	codec := kgo.NoCompression()
	if lz4 {
		codec = kgo.Lz4Compression()
	}
	return []kgo.Opt{
		kgo.SeedBrokers(a.brokers...),
		kgo.ClientID("weir-bench-franz"),
		kgo.ConsumerGroup(a.app),
		kgo.ConsumeTopics(a.in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ProducerBatchCompression(codec),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
}

// franzALO copies input to output as a consumer-group member with kgo's
// idempotent acks=all producer on the same client; an input record is
// marked once its copy is acknowledged and marked offsets are committed
// every 100 ms (AutoCommitMarks) — ceiling-alo's contract.
func franzALO(ctx context.Context, a childArgs, lz4 bool) error {
	opts := append(franzOpts(a, lz4), kgo.AutoCommitMarks(), kgo.AutoCommitInterval(franzEpoch))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	logged := 0
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				fmt.Fprintf(os.Stderr, "franz-alo fetch %s/%d: %v\n", t, p, err)
			}
		})
		fs.EachRecord(func(in *kgo.Record) {
			out := &kgo.Record{Topic: a.out, Partition: in.Partition, Key: in.Key, Value: in.Value}
			cl.Produce(ctx, out, func(_ *kgo.Record, err error) {
				if err != nil {
					if logged < franzProduceLogOnce && ctx.Err() == nil {
						logged++
						fmt.Fprintln(os.Stderr, "franz-alo produce:", err)
					}
					return
				}
				cl.MarkCommitRecords(in)
			})
		})
	}
	return nil
}

// franzEOS copies input to output in transactions with kgo's
// GroupTransactSession (read_committed, KIP-447 offsets in the
// transaction): one transaction per epoch (100 ms, or the row's epoch
// segment: franz-eos-10ms), polling until the epoch ends, then
// End(TryCommit) — ceiling-eos's contract.
func franzEOS(ctx context.Context, a childArgs, lz4 bool) error {
	opts := append(franzOpts(a, lz4),
		kgo.TransactionalID(a.app+"-txn"),
		kgo.TransactionTimeout(franzTxnTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), // group offsets are always fetched stable (KIP-447)
	)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	defer sess.Close()
	var produceErr error
	for ctx.Err() == nil {
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		epoch, cancel := context.WithTimeout(ctx, a.epoch)
		for epoch.Err() == nil {
			fs := sess.PollFetches(epoch)
			fs.EachError(func(t string, p int32, err error) {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					fmt.Fprintf(os.Stderr, "franz-eos fetch %s/%d: %v\n", t, p, err)
				}
			})
			fs.EachRecord(func(in *kgo.Record) {
				sess.Produce(ctx, &kgo.Record{Topic: a.out, Partition: in.Partition, Key: in.Key, Value: in.Value},
					func(_ *kgo.Record, err error) {
						if err != nil && produceErr == nil && ctx.Err() == nil {
							produceErr = err // End aborts the transaction on its own
							fmt.Fprintln(os.Stderr, "franz-eos produce:", err)
						}
					})
			})
		}
		cancel()
		if ctx.Err() != nil {
			_, _ = sess.End(context.Background(), kgo.TryAbort)
			return nil
		}
		if _, err := sess.End(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("end: %w", err)
		}
	}
	return nil
}
