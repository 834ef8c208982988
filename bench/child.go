package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// childArgs is what the parent passes to a re-executed child process.
type childArgs struct {
	system, workload, in, out, app, dir string
	brokers                             []string
	// client is the weir rows' Kafka client from the row's name
	// (splitClient); "" leaves it to WEIR_KAFKA_CLIENT.
	client weir.KafkaClient
	// status: the row serves its status page and a reader polls it
	// (splitStatus).
	status bool
	// epoch is the weir rows' epoch interval from the row's name
	// (splitEpoch).
	epoch time.Duration
}

// runChild runs one system until ctx is done (the parent sends SIGTERM).
func runChild(ctx context.Context, a childArgs) error {
	var err error
	if a.system, a.epoch, err = splitEpoch(a.system); err != nil {
		return err
	}
	a.system, a.client = splitClient(a.system)
	a.system, a.status = splitStatus(a.system)
	switch a.system {
	case sysCeilingALO:
		return ceilingALO(ctx, a, nil)
	case sysCeilingEOS:
		return ceilingEOS(ctx, a, nil)
	case sysWeirALO, sysWeirEOS, sysWeirMB, sysWeirEOSCache, sysWeirMBCache:
		return runWeir(ctx, a)
	case sysGoka:
		return runGoka(ctx, a)
	}
	if run := extraChild(a.system); run != nil {
		return run(ctx, a)
	}
	if run := pgChild(a.system); run != nil { // pgsink.go
		return run(ctx, a)
	}
	if run := pauseChild(a.system); run != nil { // pause.go
		return run(ctx, a)
	}
	return fmt.Errorf("unknown system %q", a.system)
}

// keep reports whether the stateless filter keeps a value: records whose
// byte 19 (just after the 19-digit send time) is 'z' are dropped.
func keep(v []byte) bool { return len(v) < 20 || v[19] != 'z' }

func weirTopology(a childArgs) (*topology.Topology, error) {
	b := topology.NewBuilder()
	if a.workload == wlStateless {
		s := topology.NewStream(b, a.in, serde.Bytes(), serde.Bytes())
		f := s.Filter(func(_, v []byte) bool { return keep(v) })
		topology.MapValues(f, func(v []byte) []byte { return bytes.ToUpper(v) }).To(a.out)
		return b.Build()
	}
	lines := topology.NewStream(b, a.in, serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("words")).
		Count(topology.Materialized("counts")).
		ToStream().
		To(a.out)
	return b.Build()
}

// benchLinger and benchMaxRecords, set at build time (go build -ldflags
// "-X main.benchLinger=5ms -X main.benchMaxRecords=200000"), give the
// continuous-mode weir rows WithLinger and the micro-batch rows another
// MaxRecordsPerBatch than mbMaxRecords: such a build as the -alt binary
// measures them against the defaults in one run.
var benchLinger, benchMaxRecords string

// mbMaxRecords is the micro-batch rows' MaxRecordsPerBatch.
const mbMaxRecords = 20000

// runWeir runs the weir rows; extra are options of a variant (the
// "-lz4" rows: WithCompression).
func runWeir(ctx context.Context, a childArgs, extra ...weir.Option) error {
	topo, err := weirTopology(a)
	if err != nil {
		return err
	}
	opts := []weir.Option{
		weir.WithBrokers(a.brokers...),
		weir.WithApplicationID(a.app),
		weir.WithStateDir(a.dir),
		weir.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		weir.WithEpochInterval(a.epoch),
	}
	opts = append(opts, extra...)
	if a.client != "" {
		opts = append(opts, weir.WithKafkaClient(a.client))
	}
	if benchLinger != "" && !strings.Contains(a.system, "-mb-") { // see benchLinger
		d, err := time.ParseDuration(benchLinger)
		if err != nil {
			return fmt.Errorf("benchLinger: %w", err)
		}
		opts = append(opts, weir.WithLinger(d))
	}
	if cached(a.system) {
		opts = append(opts, weir.WithCacheMaxBytes(cacheMaxBytes))
	}
	maxRecords := int64(mbMaxRecords)
	if benchMaxRecords != "" { // see benchLinger
		n, err := strconv.ParseInt(benchMaxRecords, 10, 64)
		if err != nil {
			return fmt.Errorf("benchMaxRecords: %w", err)
		}
		maxRecords = n
	}
	switch a.system {
	case sysWeirEOS, sysWeirEOSCache:
		opts = append(opts, weir.WithGuarantee(weir.ExactlyOnce))
	case sysWeirMB, sysWeirMBCache:
		opts = append(opts, weir.WithGuarantee(weir.ExactlyOnce),
			weir.WithMicroBatch(microbatch.Config{Trigger: microbatch.Continuously(), MaxRecordsPerBatch: maxRecords}))
	}
	if a.status {
		opts = append(opts, weir.WithHTTP("127.0.0.1:0"))
	}
	app, err := weir.New(topo, opts...)
	if err != nil {
		return err
	}
	go writePhases(ctx, app.Metrics(), a.system+"-"+a.workload+"-"+filepath.Base(a.app))
	if a.status {
		go pollStatus(ctx, app)
	}
	return app.Run(ctx)
}

// pollStatus reads the status page's data every 2 s, as the page open in
// a browser does, until ctx is done.
func pollStatus(ctx context.Context, app *weir.App) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var since int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		addr := app.HTTPAddr()
		if addr == "" {
			continue
		}
		resp, err := http.Get(fmt.Sprintf("http://%s/status/group?since=%d", addr, since))
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		since = time.Now().UnixMilli() - 1000
	}
}

func runGoka(ctx context.Context, a childArgs) error {
	g := goka.DefineGroup(goka.Group(a.app),
		// stateless (used for the latency rows): filter + map, emitted to out
		goka.Input(goka.Stream(a.in), new(codec.Bytes), func(gc goka.Context, msg any) {
			if v := msg.([]byte); keep(v) {
				gc.Emit(goka.Stream(a.out), gc.Key(), bytes.ToUpper(v))
			}
		}),
		goka.Output(goka.Stream(a.out), new(codec.Bytes)),
	)
	if a.workload == wlWordCount {
		g = gokaWordCount(a)
	}
	gcfg := goka.DefaultConfig() // goka's defaults (acks=1, snappy), but read the preloaded input from the start
	gcfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	goka.ReplaceGlobalConfig(gcfg)
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = 1
	tmc.Stream.Replication = 1
	p, err := goka.NewProcessor(a.brokers, g,
		goka.WithStorageBuilder(storage.DefaultBuilder(a.dir)),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithTopicManagerConfig(tmc)),
	)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// gokaWordCount: input → Loopback by word → SetValue/Emit, LevelDB.
func gokaWordCount(a childArgs) *goka.GroupGraph {
	return goka.DefineGroup(goka.Group(a.app),
		goka.Input(goka.Stream(a.in), new(codec.String), func(gc goka.Context, msg any) {
			for _, w := range strings.Fields(msg.(string)) {
				gc.Loopback(w, "")
			}
		}),
		goka.Loop(new(codec.String), func(gc goka.Context, _ any) {
			var c int64
			if v := gc.Value(); v != nil {
				c = v.(int64)
			}
			c++
			gc.SetValue(c)
			gc.Emit(goka.Stream(a.out), gc.Key(), c)
		}),
		goka.Output(goka.Stream(a.out), new(codec.Int64)),
		goka.Persist(new(codec.Int64)),
	)
}

func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V2_5_0_0
	c.ClientID = "weir-bench"
	c.ChannelBufferSize = 1024
	c.Consumer.Return.Errors = true
	c.Producer.Return.Errors = true
	return c
}

func partitionsOf(client sarama.Client, topic string) ([]int32, error) {
	for i := 0; ; i++ {
		ps, err := client.Partitions(topic)
		if err == nil && len(ps) > 0 {
			return ps, nil
		}
		if i > 50 {
			return nil, fmt.Errorf("partitions of %s: %v", topic, err)
		}
		_ = client.RefreshMetadata(topic)
		time.Sleep(100 * time.Millisecond)
	}
}

// ceilingALO copies input to output as a consumer-group member with an
// acks=all idempotent producer (its own client); an offset is marked once
// its copy is acked, and marked offsets are committed every 100 ms. No
// processing. tune, when not nil, changes both clients' configurations
// (ceiling-alo-tuned).
func ceilingALO(ctx context.Context, a childArgs, tune func(*sarama.Config)) error {
	pcfg := saramaConfig()
	pcfg.Producer.RequiredAcks = sarama.WaitForAll
	pcfg.Producer.Idempotent = true
	pcfg.Net.MaxOpenRequests = 1
	pcfg.Producer.Return.Successes = true
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	ccfg := saramaConfig()
	ccfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	ccfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	if tune != nil {
		tune(pcfg)
		tune(ccfg)
	}
	prod, err := sarama.NewAsyncProducer(a.brokers, pcfg)
	if err != nil {
		return err
	}
	defer prod.AsyncClose()
	group, err := sarama.NewConsumerGroup(a.brokers, a.app, ccfg)
	if err != nil {
		return err
	}
	defer group.Close()
	h := &aloHandler{prod: prod, out: a.out}
	go func() {
		for m := range prod.Successes() {
			if s := h.sess.Load(); s != nil {
				(*s).MarkOffset(a.in, m.Partition, m.Metadata.(int64)+1, "")
			}
		}
	}()
	go func() {
		for e := range prod.Errors() {
			fmt.Fprintln(os.Stderr, "ceiling-alo produce:", e)
		}
	}()
	go func() {
		for e := range group.Errors() {
			fmt.Fprintln(os.Stderr, "ceiling-alo group:", e)
		}
	}()
	for ctx.Err() == nil {
		if err := group.Consume(ctx, []string{a.in}, h); err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

type aloHandler struct {
	prod sarama.AsyncProducer
	out  string
	sess atomic.Pointer[sarama.ConsumerGroupSession]
}

func (h *aloHandler) Setup(s sarama.ConsumerGroupSession) error { h.sess.Store(&s); return nil }
func (h *aloHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *aloHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case <-s.Context().Done():
			return nil
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			h.prod.Input() <- &sarama.ProducerMessage{Topic: h.out, Partition: m.Partition,
				Key: sarama.ByteEncoder(m.Key), Value: sarama.ByteEncoder(m.Value), Metadata: m.Offset}
		}
	}
}

// ceilingEOS copies input to output in transactions: one per 100 ms epoch,
// the consumed offsets added with AddOffsetsToTxn. No processing. tune,
// when not nil, changes both clients' configurations (ceiling-eos-tuned).
func ceilingEOS(ctx context.Context, a childArgs, tune func(*sarama.Config)) error {
	cfg := saramaConfig()
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = a.app + "-txn"
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	ccfg := saramaConfig()
	ccfg.Consumer.IsolationLevel = sarama.ReadCommitted
	if tune != nil {
		tune(cfg)
		tune(ccfg)
	}
	client, err := sarama.NewClient(a.brokers, ccfg) // the consumer's own client: fetches must not queue behind produces
	if err != nil {
		return err
	}
	defer client.Close()
	ps, err := partitionsOf(client, a.in)
	if err != nil {
		return err
	}
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return err
	}
	defer cons.Close()
	prod, err := sarama.NewAsyncProducer(a.brokers, cfg)
	if err != nil {
		return err
	}
	defer prod.Close()
	go func() {
		for e := range prod.Errors() {
			fmt.Fprintln(os.Stderr, "ceiling-eos produce:", e)
		}
	}()
	msgs := make(chan *sarama.ConsumerMessage, 4096)
	for _, p := range ps {
		pc, err := cons.ConsumePartition(a.in, p, sarama.OffsetOldest)
		if err != nil {
			return err
		}
		defer pc.AsyncClose()
		go func() {
			for m := range pc.Messages() {
				msgs <- m
			}
		}()
	}
	offs := map[int32]int64{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	if err := prod.BeginTxn(); err != nil {
		return err
	}
	commit := func() error {
		if len(offs) > 0 {
			var pom []*sarama.PartitionOffsetMetadata
			for p, o := range offs {
				pom = append(pom, &sarama.PartitionOffsetMetadata{Partition: p, Offset: o})
			}
			if err := prod.AddOffsetsToTxn(map[string][]*sarama.PartitionOffsetMetadata{a.in: pom}, a.app); err != nil {
				return fmt.Errorf("add offsets: %w", err)
			}
			clear(offs)
		}
		if err := prod.CommitTxn(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return prod.BeginTxn()
	}
	for {
		select {
		case <-ctx.Done():
			return commit()
		case <-tick.C:
			if err := commit(); err != nil {
				return err
			}
		case m := <-msgs:
			prod.Input() <- &sarama.ProducerMessage{Topic: a.out, Partition: m.Partition,
				Key: sarama.ByteEncoder(m.Key), Value: sarama.ByteEncoder(m.Value)}
			offs[m.Partition] = m.Offset + 1
		}
	}
}
