// Package embedded runs a Kafka broker inside the process, for development,
// examples and tests. It wraps kfake (github.com/twmb/franz-go/pkg/kfake),
// an in-memory implementation of the Kafka protocol, and serves it over
// real TCP, so any Kafka client — weir's, kcat, a Java consumer — can talk
// to it.
//
// One broker, as kfake implements it: topics and partitions, produce and
// fetch, consumer groups (classic and KIP-848), transactions with
// read_committed fetches and KIP-447 offset commits, ACL-free. Topics are
// created on demand when a client asks for it (auto-creation is on, with
// [Options].Partitions partitions), or explicitly.
//
// It is not a replacement for Kafka in production: one node, no
// replication, and only as durable as [Options].DataDir makes it.
//
// # Usage
//
//	b, err := embedded.Start(ctx, embedded.Options{})
//	if err != nil { ... }
//	defer b.Close()
//	brokers := b.Addrs() // e.g. ["127.0.0.1:40123"]
//
// The command `weir dev-broker --addr 127.0.0.1:9092 --data DIR` runs one
// until interrupted.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

// ErrOptions is wrapped by every error about invalid [Options].
var ErrOptions = errors.New("embedded: invalid options")

// Options configures [Start]. The zero value is a broker on a free
// loopback port, one partition per auto-created topic, in memory only.
type Options struct {
	// Addr is the host:port to listen on, "127.0.0.1:0" (a free port) by
	// default. The host is also the one the broker advertises to
	// clients, so it must be reachable by them: prefer an explicit
	// address to 0.0.0.0.
	Addr string
	// Partitions is the partition count of topics created without one
	// (auto-created, or CreateTopics with -1): 1 by default, like Kafka's
	// num.partitions.
	Partitions int32
	// Topics are created at start, name -> partitions (<= 0: Partitions).
	// With a DataDir that already holds state, the stored topics win and
	// Topics is ignored.
	Topics map[string]int32
	// DataDir, if set, makes the broker persistent: kfake writes its state
	// (topics, records, committed offsets, transactions) there and loads
	// it again at the next Start with the same directory. Writes go
	// through the OS page cache, like Kafka's default flush policy; state
	// is saved whole on Close. Empty means in memory only.
	DataDir string
	// GroupMinSessionTimeout is the smallest session timeout a consumer
	// group member may ask for; 6 s (Kafka's default) if zero. Tests that
	// kill members may lower it to have their partitions reassigned sooner.
	GroupMinSessionTimeout time.Duration
	// Logger receives kfake's log lines; none if nil. kfake logs every
	// request at its info level, mapped here to slog's Debug.
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return o, fmt.Errorf("%w: addr %q: %w", ErrOptions, o.Addr, err)
	}
	if o.Partitions == 0 {
		o.Partitions = 1
	}
	if o.Partitions < 0 {
		return o, fmt.Errorf("%w: %d partitions", ErrOptions, o.Partitions)
	}
	if o.GroupMinSessionTimeout < 0 {
		return o, fmt.Errorf("%w: negative group min session timeout", ErrOptions)
	}
	for name := range o.Topics {
		if name == "" {
			return o, fmt.Errorf("%w: topic with an empty name", ErrOptions)
		}
	}
	return o, nil
}

// Broker is a running in-process broker. Its methods are safe for
// concurrent use.
type Broker struct {
	cluster *kfake.Cluster
	addrs   []string
	once    sync.Once
}

func init() {
	kfakehook.Register(func(v any) *kfake.Cluster {
		if b, ok := v.(*Broker); ok && b != nil {
			return b.cluster
		}
		return nil
	})
}

// Start starts a broker and returns once it accepts connections. ctx
// bounds the start (binding the port, loading DataDir); it does not stop
// the broker later: Close does.
func Start(ctx context.Context, opts Options) (*Broker, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedded: start: %w", err)
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(int(opts.Partitions)),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			var lc net.ListenConfig
			return lc.Listen(ctx, network, opts.Addr)
		}),
	}
	if opts.GroupMinSessionTimeout > 0 {
		kopts = append(kopts, kfake.GroupMinSessionTimeout(opts.GroupMinSessionTimeout))
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Topics)) {
		kopts = append(kopts, kfake.SeedTopics(opts.Topics[name], name))
	}
	if opts.DataDir != "" {
		kopts = append(kopts, kfake.DataDir(opts.DataDir))
	}
	if opts.Logger != nil {
		kopts = append(kopts, kfake.WithLogger(slogLogger{opts.Logger}))
	}
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("embedded: start broker on %s: %w", opts.Addr, err)
	}
	b := &Broker{cluster: c, addrs: c.ListenAddrs()}
	if err := ctx.Err(); err != nil {
		_ = b.Close()
		return nil, fmt.Errorf("embedded: start: %w", err)
	}
	return b, nil
}

// Addrs returns the bootstrap addresses (host:port) of the broker.
func (b *Broker) Addrs() []string { return slices.Clone(b.addrs) }

// Close stops the broker, closing client connections, and with a DataDir
// saves its state there. It is idempotent and always returns nil; the
// error result is there for io.Closer.
func (b *Broker) Close() error {
	b.once.Do(b.cluster.Close)
	return nil
}

// slogLogger adapts a *slog.Logger to kfake.Logger.
type slogLogger struct{ l *slog.Logger }

// Logf implements kfake.Logger.
func (s slogLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	var lvl slog.Level
	switch level {
	case kfake.LogLevelError:
		lvl = slog.LevelError
	case kfake.LogLevelWarn:
		lvl = slog.LevelWarn
	case kfake.LogLevelInfo:
		lvl = slog.LevelDebug
	case kfake.LogLevelDebug:
		lvl = slog.LevelDebug - 4
	default:
		return
	}
	ctx := context.Background()
	if !s.l.Enabled(ctx, lvl) {
		return
	}
	s.l.Log(ctx, lvl, fmt.Sprintf(format, args...), "component", "kfake")
}
