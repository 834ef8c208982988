package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/weirstream/weir/embedded"
)

// devBrokerCommand runs an in-process Kafka broker (package embedded).
var devBrokerCommand = command{
	name:    "dev-broker",
	summary: "run an in-process Kafka broker (kfake) until interrupted",
	run:     runDevBroker,
}

const devBrokerSynopsis = `[--addr HOST:PORT] [--data DIR] [--partitions N]
    [--min-session-timeout D] [--log-level LEVEL]

Runs one in-process Kafka broker (kfake: topics, consumer groups,
transactions) until SIGINT or SIGTERM, for development and examples. It
prints KAFKA_BROKERS=<address> on stdout once it accepts connections.
Without --data everything is in memory and lost on exit; with it, the
state is saved to DIR and loaded again at the next start.

flags:`

// runDevBroker is the dev-broker command.
func runDevBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev-broker", devBrokerSynopsis, stderr)
	addr := fs.String("addr", "127.0.0.1:9092", "`host:port` to listen on and advertise (port 0: a free one)")
	data := fs.String("data", "", "`directory` to persist the broker's state in (default: memory only)")
	partitions := fs.Int("partitions", 1, "partition `count` of auto-created topics")
	minSession := fs.Duration("min-session-timeout", 6*time.Second, "smallest consumer group session timeout accepted")
	level := fs.String("log-level", "warn", "broker log `level`: none, error, warn, info or debug")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger, err := brokerLogger(*level, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "weir dev-broker: %v\n", err)
		return errUsage
	}
	if *partitions < 1 || *partitions > 1<<20 {
		fmt.Fprintf(stderr, "weir dev-broker: --partitions %d out of range\n", *partitions)
		return errUsage
	}

	b, err := embedded.Start(ctx, embedded.Options{
		Addr:                   *addr,
		Partitions:             int32(*partitions),
		DataDir:                *data,
		GroupMinSessionTimeout: *minSession,
		Logger:                 logger,
	})
	if err != nil {
		return fmt.Errorf("dev-broker: %w", err)
	}
	where := "in memory"
	if *data != "" {
		where = "data in " + *data
	}
	fmt.Fprintf(stderr, "weir dev-broker: listening on %s (%s); interrupt to stop\n", strings.Join(b.Addrs(), ","), where)
	fmt.Fprintf(stdout, "KAFKA_BROKERS=%s\n", strings.Join(b.Addrs(), ","))

	<-ctx.Done()
	if err := b.Close(); err != nil {
		return fmt.Errorf("dev-broker: close: %w", err)
	}
	fmt.Fprintln(stderr, "weir dev-broker: stopped")
	return nil
}

// brokerLogger returns a text logger to w at the named level, or nil for
// "none".
func brokerLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	switch strings.ToLower(level) {
	case "none":
		return nil, nil
	case "error":
		l = slog.LevelError
	case "warn":
		l = slog.LevelWarn
	case "info":
		l = slog.LevelInfo
	case "debug":
		l = slog.LevelDebug - 4 // kfake's own debug level maps below slog's Debug
	default:
		return nil, fmt.Errorf("unknown log level %q (want none, error, warn, info or debug)", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
