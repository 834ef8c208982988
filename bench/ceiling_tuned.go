package main

import (
	"context"
	"time"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"
)

// The tuned sarama ceilings: the same copiers as ceiling-alo and
// ceiling-eos (child.go), with what a performance-minded sarama user sets.
// A "-lz4" suffix compresses the produced batches with lz4.

// Tuned sarama settings.
const (
	// tunedChannelBuffer is every sarama channel's capacity (256 by
	// default; the ceilings already use 1024): fewer goroutine wake-ups
	// per record between sarama's stages.
	tunedChannelBuffer = 4096
	// tunedFetchDefault is the bytes asked per partition and fetch
	// (sarama's default 1 MiB): fewer, larger fetch responses.
	tunedFetchDefault = 4 << 20
	// tunedFlushBytes lets a produce request wait for this many bytes of
	// one broker's batches (or tunedFlushFrequency, whichever is first)
	// instead of sending whatever is buffered at once.
	tunedFlushBytes = 512 << 10
	// tunedMaxMessageBytes bounds one request's record batches (sarama's
	// default 1,000,000, which is also the broker's per-batch limit).
	tunedMaxMessageBytes = 1_000_000
	// tunedFlushFrequency is the producer's linger: at most this long
	// before a batch short of tunedFlushBytes is sent.
	tunedFlushFrequency = 2 * time.Millisecond
)

// tuneSarama returns the tuning applied to the clients of the tuned
// ceilings: sarama's go-metrics registry off (process-wide, which is fine
// in a child process), the newest protocol version sarama knows (Kafka 4.4
// serves it), producer batching and linger, larger fetches and channel
// buffers, and lz4 when asked.
func tuneSarama(lz4 bool) func(*sarama.Config) {
	metrics.UseNilMetrics = true
	return func(c *sarama.Config) {
		c.Version = sarama.MaxVersion
		c.ChannelBufferSize = tunedChannelBuffer
		c.Consumer.Fetch.Default = tunedFetchDefault
		c.Producer.Flush.Bytes = tunedFlushBytes
		c.Producer.Flush.Frequency = tunedFlushFrequency
		c.Producer.MaxMessageBytes = tunedMaxMessageBytes
		if lz4 {
			c.Producer.Compression = sarama.CompressionLZ4
		}
	}
}

// ceilingALOTuned is ceiling-alo with tuneSarama.
func ceilingALOTuned(ctx context.Context, a childArgs, lz4 bool) error {
	return ceilingALO(ctx, a, tuneSarama(lz4))
}

// ceilingEOSTuned is ceiling-eos with tuneSarama.
func ceilingEOSTuned(ctx context.Context, a childArgs, lz4 bool) error {
	return ceilingEOS(ctx, a, tuneSarama(lz4))
}
