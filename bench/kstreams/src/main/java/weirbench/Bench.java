package weirbench;

import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The Kafka Streams rows of weir's benchmark (bench/harness.go starts this
 * as a child process):
 *
 * <pre>
 * java -jar target/kstreams-bench.jar SYSTEM WORKLOAD BROKERS IN OUT APP STATEDIR
 * </pre>
 *
 * SYSTEM is kstreams-alo (at_least_once), kstreams-eos (exactly_once_v2) or
 * kstreams-eos-cache (exactly_once_v2 with the record cache on, 10 MiB);
 * WORKLOAD is stateless (filter + map of byte values) or wordcount (flatMap,
 * groupBy word through a repartition topic, count into the default persistent
 * RocksDB store, every update to OUT) or keycount (the pause scenario,
 * bench/pause.go: groupByKey — no repartition — and count into "counts",
 * every update to OUT, which keeps each output partition its input
 * partition's). It runs until SIGTERM.
 *
 * <p>The pause scenario sets more through the environment:
 * WEIR_BENCH_KS_STANDBYS (num.standby.replicas), WEIR_BENCH_KS_SESSION_MS
 * (the consumer's session.timeout.ms), WEIR_BENCH_KS_THREADS
 * (num.stream.threads) and WEIR_BENCH_KS_PROTOCOL ("streams": group.protocol
 * streams, KIP-1071; default classic).
 */
public final class Bench {
    private Bench() {}

    /** keep is the stateless filter: byte 19 'z' drops the record (as keep in bench/child.go). */
    static boolean keep(byte[] v) {
        return v == null || v.length < 20 || v[19] != 'z';
    }

    /** upper is bytes.ToUpper for ASCII. */
    static byte[] upper(byte[] v) {
        byte[] o = Arrays.copyOf(v, v.length);
        for (int i = 0; i < o.length; i++) {
            if (o[i] >= 'a' && o[i] <= 'z') {
                o[i] -= 32;
            }
        }
        return o;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7 && args.length != 8) {
            System.err.println("usage: SYSTEM WORKLOAD BROKERS IN OUT APP STATEDIR [COMMIT_INTERVAL_MS]");
            System.exit(2);
        }
        String system = args[0], workload = args[1], brokers = args[2], in = args[3], out = args[4], app = args[5], dir = args[6];

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        p.put(StreamsConfig.STATE_DIR_CONFIG, dir);
        switch (system) {
            case "kstreams-alo" -> p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
            case "kstreams-eos", "kstreams-eos-cache" -> p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
            default -> throw new IllegalArgumentException("unknown system " + system);
        }
        // The same commit interval as weir's epochs for both guarantees:
        // 100 ms, or the row's epoch segment (kstreams-eos-10ms).
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, args.length == 8 ? Integer.parseInt(args[7]) : 100);
        // kstreams-alo and kstreams-eos: every count update goes downstream,
        // as weir does by default: the record cache (on by default) would
        // suppress intermediate updates and change the number of output
        // records the harness waits for.
        // kstreams-eos-cache keeps it on at its default size (10 MiB, as
        // weir-*-eos-cache's WithCacheMaxBytes): the harness then waits for
        // every word's final count instead.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, system.endsWith("-cache") ? 10L * 1024 * 1024 : 0);
        // One stream thread per CPU (weir's loops use all CPUs too).
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Runtime.getRuntime().availableProcessors());
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        String env;
        if ((env = System.getenv("WEIR_BENCH_KS_STANDBYS")) != null) {
            p.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, Integer.parseInt(env));
        }
        if ((env = System.getenv("WEIR_BENCH_KS_SESSION_MS")) != null) {
            p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), Integer.parseInt(env));
            p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), Math.max(500, Integer.parseInt(env) / 3));
        }
        if ((env = System.getenv("WEIR_BENCH_KS_HEARTBEAT_MS")) != null) {
            p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), Integer.parseInt(env));
        }
        if ((env = System.getenv("WEIR_BENCH_KS_THREADS")) != null) {
            p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(env));
        }
        if ("streams".equals(System.getenv("WEIR_BENCH_KS_PROTOCOL"))) {
            p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        }

        StreamsBuilder b = new StreamsBuilder();
        switch (workload) {
            case "stateless" -> {
                KStream<byte[], byte[]> s = b.stream(in, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()));
                s.filter((k, v) -> keep(v)).mapValues(Bench::upper).to(out, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
            }
            case "wordcount" -> {
                KStream<String, String> lines = b.stream(in, Consumed.with(Serdes.String(), Serdes.String()));
                lines.flatMapValues(l -> Arrays.asList(l.split(" ")))
                        .groupBy((k, w) -> w, Grouped.with("words", Serdes.String(), Serdes.String()))
                        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                        .toStream()
                        .to(out, Produced.with(Serdes.String(), Serdes.Long()));
            }
            case "keycount" -> {
                KStream<String, String> words = b.stream(in, Consumed.with(Serdes.String(), Serdes.String()));
                words.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                        .toStream()
                        .to(out, Produced.with(Serdes.String(), Serdes.Long()));
            }
            default -> throw new IllegalArgumentException("unknown workload " + workload);
        }

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("kstreams: uncaught: " + e);
            e.printStackTrace();
            done.countDown();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> {
            System.err.println("kstreams: state " + before + " -> " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(15));
            done.countDown();
        }));
        streams.start();
        done.await();
        streams.close(Duration.ofSeconds(15));
        if (streams.state() == KafkaStreams.State.ERROR) {
            System.exit(1);
        }
    }
}
