package weirconformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The oracle of weir's conformance suite: runs each script (a JSON file,
 * see conformance/doc.go) through the equivalent Kafka Streams topology in
 * TopologyTestDriver with the record cache off, and prints every output
 * record as a JSON line: {"script", "after" (index of the input that caused
 * it), "topic", "key", "value", "ts"}, reading after each input the
 * script's "outputs" topics (default "out") in their order. Kept as plain
 * as possible: it is the reference.
 */
public final class Oracle {
  static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    int failed = 0;
    for (String path : args) {
      try {
        run(path, out);
      } catch (Exception e) {
        ObjectNode n = JSON.createObjectNode();
        n.put("script", path);
        n.put("error", e.toString());
        out.println(JSON.writeValueAsString(n));
        failed++;
      }
    }
    out.flush();
    System.exit(failed == 0 ? 0 : 1);
  }

  static long ms(JsonNode s, String field) {
    return s.path(field).asLong(0);
  }

  static String str(JsonNode s, String field, String def) {
    JsonNode n = s.get(field);
    return n == null || n.isNull() ? def : n.asText();
  }

  /** The stream of "in", filtered and re-keyed as the script says. */
  static KStream<String, String> input(StreamsBuilder b, JsonNode s, String topic) {
    KStream<String, String> in = b.stream(topic, Consumed.with(Serdes.String(), Serdes.String()));
    String drop = str(s, "filter", null);
    if (drop != null) {
      in = in.filter((k, v) -> !drop.equals(v));
    }
    return in;
  }

  static KGroupedStream<String, String> grouped(KStream<String, String> in, JsonNode s) {
    if (s.path("rekey").asBoolean(false)) {
      // The new key is the value's first character.
      return in.groupBy((k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1),
          Grouped.with(Serdes.String(), Serdes.String()));
    }
    return in.groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
  }

  static String text(Object v) {
    return v == null ? null : v.toString();
  }

  /**
   * Builds one family of operators: adds the script's topology to b, or
   * returns false when op is not one of the family's. Each family lives in
   * a file of its own and is listed in FAMILIES.
   */
  interface Family {
    boolean build(StreamsBuilder b, JsonNode s, String op);
  }

  static final List<Family> FAMILIES = List.of(
      new Aggregations(),
      new Cogroup(),
      new Suppress(),
      new GlobalTables(),
      new Joins(),
      new OuterJoins(),
      new ForeignKeyJoins(),
      new TableAggregations(),
      new StreamToTable(),
      new Versioned(),
      new TimestampExtractors(),
      new HeaderOps(),
      new OrdersPort(),
      new Stateless());

  static Topology topology(JsonNode s) {
    StreamsBuilder b = new StreamsBuilder();
    String op = s.get("op").asText();
    for (Family f : FAMILIES) {
      if (f.build(b, s, op)) {
        return b.build();
      }
    }
    throw new IllegalArgumentException("unknown op " + op);
  }

  static final Produced<String, String> OUT = Produced.with(Serdes.String(), Serdes.String());

  /** The table of topic, materialized in store. */
  static KTable<String, String> table(StreamsBuilder b, String topic, String store) {
    return b.table(topic, Consumed.with(Serdes.String(), Serdes.String()),
        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(store));
  }

  static void run(String path, PrintStream out) throws Exception {
    JsonNode s = JSON.readTree(new File(path));
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, "conformance");
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    // A state directory of its own: a script that fails leaves no lock
    // behind, and two runs on one machine do not share RocksDB files.
    java.nio.file.Path stateDir = java.nio.file.Files.createTempDirectory("weir-conformance-");
    props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    TopologyTestDriver d = new TopologyTestDriver(topology(s), props, Instant.ofEpochMilli(0));
    Restart restarts = new Restart();
    try {
      // The output topics, read after each input in this order: the
      // script's "outputs", or "out".
      JsonNode names = s.get("outputs");
      if (names == null || names.isEmpty()) {
        names = JSON.createArrayNode().add("out");
      }
      Map<String, TestInputTopic<String, String>> ins = new HashMap<>();
      Map<String, TestOutputTopic<String, String>> outs = outputs(d, names);
      long wall = 0;
      int i = 0;
      for (JsonNode r : s.get("inputs")) {
        if (r.path("restart").asBoolean(false)) {
          // The application restarts before this input, on a topology
          // built again from the script, as a restarted application does.
          d = restarts.restart(d, topology(s), props, Instant.ofEpochMilli(wall));
          ins.clear();
          outs = outputs(d, names);
        }
        String topic = str(r, "topic", "in");
        TopologyTestDriver driver = d;
        TestInputTopic<String, String> in = ins.computeIfAbsent(topic,
            t -> driver.createInputTopic(t, new StringSerializer(), new StringSerializer()));
        // Emit-on-window-close looks for closed windows at most once a
        // second of wall-clock time: let a second pass before each record.
        d.advanceWallClockTime(Duration.ofSeconds(1));
        wall += 1000;
        in.pipeInput(new TestRecord<>(str(r, "key", null), str(r, "value", null), headers(r), Instant.ofEpochMilli(r.get("ts").asLong())));
        for (Map.Entry<String, TestOutputTopic<String, String>> o : outs.entrySet()) {
          for (TestRecord<String, String> rec : o.getValue().readRecordsToList()) {
            ObjectNode n = JSON.createObjectNode();
            n.put("script", path);
            n.put("after", i);
            n.put("topic", o.getKey());
            n.put("key", rec.key());
            n.put("value", rec.value());
            n.put("ts", rec.timestamp());
            if (rec.headers().toArray().length > 0) {
              com.fasterxml.jackson.databind.node.ArrayNode hs = n.putArray("headers");
              for (org.apache.kafka.common.header.Header h : rec.headers()) {
                hs.addArray().add(h.key()).add(h.value() == null ? "" : new String(h.value(), StandardCharsets.UTF_8));
              }
            }
            out.println(JSON.writeValueAsString(n));
          }
        }
        i++;
      }
      d.close();
    } catch (Exception e) {
      try {
        d.close();
      } catch (RuntimeException again) {
        e.addSuppressed(again);
      }
      throw e;
    } finally {
      deleteTree(stateDir.toFile());
    }
  }

  /** The readers of the output topics names, in order. */
  static Map<String, TestOutputTopic<String, String>> outputs(TopologyTestDriver d, JsonNode names) {
    Map<String, TestOutputTopic<String, String>> outs = new LinkedHashMap<>();
    for (JsonNode name : names) {
      outs.put(name.asText(), d.createOutputTopic(name.asText(), new StringDeserializer(), new StringDeserializer()));
    }
    return outs;
  }

  /** The input's optional "headers": [[key, value], ...]. */
  static org.apache.kafka.common.header.Headers headers(JsonNode r) {
    org.apache.kafka.common.header.internals.RecordHeaders hs = new org.apache.kafka.common.header.internals.RecordHeaders();
    for (JsonNode h : r.path("headers")) {
      hs.add(h.get(0).asText(), h.get(1).asText().getBytes(StandardCharsets.UTF_8));
    }
    return hs;
  }

  static void deleteTree(File f) {
    File[] children = f.listFiles();
    if (children != null) {
      for (File c : children) {
        deleteTree(c);
      }
    }
    f.delete();
  }
}
