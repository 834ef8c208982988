package weirbench;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The Kafka Streams side of weir's restore benchmark (bench/restore.go starts
 * it as a child process):
 *
 * <pre>
 * java -cp target/kstreams-bench.jar weirbench.Restore BROKERS IN APP STATEDIR
 * </pre>
 *
 * A groupByKey + reduce of byte keys and values into the persistent RocksDB
 * store "store", whose changelog APP-store-changelog the harness filled
 * beforehand; IN (one partition, like the changelog) stays empty. With an
 * empty state dir the one task restores the whole changelog before it runs.
 * A restore listener prints, on stdout, one line when the restore ends:
 * "restored RECORDS NANOSECONDS" (from onRestoreStart to onRestoreEnd); then
 * the app closes. Kafka Streams' defaults otherwise, at_least_once, one
 * stream thread.
 */
public final class Restore {
    private Restore() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: BROKERS IN APP STATEDIR");
            System.exit(2);
        }
        String brokers = args[0], in = args[1], app = args[2], dir = args[3];

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        p.put(StreamsConfig.STATE_DIR_CONFIG, dir);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .groupByKey(Grouped.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .reduce((agg, v) -> v, Materialized.<byte[], byte[], KeyValueStore<Bytes, byte[]>>as("store")
                        .withKeySerde(Serdes.ByteArray()).withValueSerde(Serdes.ByteArray()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        AtomicLong start = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long from, long to) {
                System.err.println("kstreams: restoring " + store + " " + tp + " from " + from + " to " + to);
                start.set(System.nanoTime());
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {}

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                long took = System.nanoTime() - start.get();
                System.out.println("restored " + total + " " + took);
                System.out.flush();
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("kstreams: uncaught: " + e);
            e.printStackTrace();
            failed.set(1);
            done.countDown();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        boolean ended = done.await(10, TimeUnit.MINUTES);
        streams.close(Duration.ofSeconds(15));
        System.exit(ended && failed.get() == 0 ? 0 : 1);
    }
}
