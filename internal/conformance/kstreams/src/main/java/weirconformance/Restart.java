package weirconformance;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.internals.AbstractTask;
import org.apache.kafka.streams.processor.internals.ProcessorStateManager;
import org.apache.kafka.streams.processor.internals.StateDirectory;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Restarts an application run by TopologyTestDriver (a script input with
 * "restart": true) as Kafka Streams restarts on the same machine: the task
 * is closed cleanly (committed, stores flushed, checkpoint written) and a
 * new driver opens on the same application id and state directory, so the
 * persistent (RocksDB) stores come back from disk; in-memory logged stores
 * (suppress's buffer) are restored from their changelogs, as Kafka Streams
 * restores them. What processors keep in fields (their stream time) starts
 * again.
 *
 * TopologyTestDriver does neither on its own: close() deletes the state
 * directory (StateDirectory.clean()) and a new driver never reads a
 * changelog. So, through reflection on its internals: the closing driver is
 * given a state directory whose clean() keeps the files, and the new
 * driver's task restores its in-memory stores from the changelog records
 * the drivers before it wrote.
 */
final class Restart {
  /** Every changelog record written so far, by changelog topic. */
  private final Map<String, List<ConsumerRecord<byte[], byte[]>>> changelogs = new HashMap<>();

  /** Closes d, keeping its state, and returns a new driver on topo. */
  TopologyTestDriver restart(TopologyTestDriver d, Topology topo, Properties props, Instant wall) throws Exception {
    Field dir = TopologyTestDriver.class.getDeclaredField("stateDirectory");
    dir.setAccessible(true);
    dir.set(d, new StateDirectory(new StreamsConfig(props), Time.SYSTEM, false, false) {
      @Override
      public synchronized void clean() {
        // Keep the state directory: the next driver opens it.
      }
    });
    d.close();
    // Read after close: the close commits, which flushes the buffers that
    // write their changelogs at commit.
    for (String topic : d.producedTopicNames()) {
      if (!topic.endsWith("-changelog")) {
        continue;
      }
      List<ConsumerRecord<byte[], byte[]>> log = changelogs.computeIfAbsent(topic, t -> new ArrayList<>());
      TestOutputTopic<byte[], byte[]> t = d.createOutputTopic(topic, new ByteArrayDeserializer(), new ByteArrayDeserializer());
      for (TestRecord<byte[], byte[]> r : t.readRecordsToList()) {
        // A buffer's changelog record may carry no timestamp.
        long ts = r.timestamp() == null ? ConsumerRecord.NO_TIMESTAMP : r.timestamp();
        log.add(new ConsumerRecord<>(topic, 0, log.size(), ts, TimestampType.CREATE_TIME,
            -1, -1, r.key(), r.value(), r.headers(), Optional.empty()));
      }
    }
    TopologyTestDriver next = new TopologyTestDriver(topo, props, wall);
    restoreInMemoryStores(next);
    return next;
  }

  private void restoreInMemoryStores(TopologyTestDriver d) throws Exception {
    Field taskField = TopologyTestDriver.class.getDeclaredField("task");
    taskField.setAccessible(true);
    Object task = taskField.get(d);
    if (task == null) {
      return;
    }
    Field mgrField = AbstractTask.class.getDeclaredField("stateMgr");
    mgrField.setAccessible(true);
    ProcessorStateManager mgr = (ProcessorStateManager) mgrField.get(task);
    Method metadata = ProcessorStateManager.class.getDeclaredMethod("storeMetadata", TopicPartition.class);
    metadata.setAccessible(true);
    Method restore = ProcessorStateManager.class.getDeclaredMethod("restore",
        ProcessorStateManager.StateStoreMetadata.class, List.class, OptionalLong.class);
    restore.setAccessible(true);
    Method store = ProcessorStateManager.StateStoreMetadata.class.getDeclaredMethod("store");
    store.setAccessible(true);
    for (Map.Entry<String, List<ConsumerRecord<byte[], byte[]>>> e : changelogs.entrySet()) {
      Object meta = metadata.invoke(mgr, new TopicPartition(e.getKey(), 0));
      if (meta == null || e.getValue().isEmpty() || ((StateStore) store.invoke(meta)).persistent()) {
        continue;
      }
      restore.invoke(mgr, meta, e.getValue(), OptionalLong.empty());
    }
  }
}
