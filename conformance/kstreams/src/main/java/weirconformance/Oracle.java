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
 * it), "topic", "key", "value", "ts"}. Kept as plain as possible: it is
 * the reference.
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

  static void windowedOut(KTable<Windowed<String>, ?> t) {
    t.toStream()
        .map((wk, v) -> KeyValue.pair(wk.key() + "@" + wk.window().start() + "/" + wk.window().end(), text(v)))
        .to("out", Produced.with(Serdes.String(), Serdes.String()));
  }

  static <W extends Window> KTable<Windowed<String>, ?> aggregate(TimeWindowedKStream<String, String> w, JsonNode s, String store) {
    String fin = str(s, "final", "");
    Materialized<String, Object, WindowStore<Bytes, byte[]>> m = Materialized.as(store);
    if (fin.equals("onclose")) {
      w = w.emitStrategy(EmitStrategy.onWindowClose());
      // With the default retention (size + grace) the store may expire a
      // window before the record that closes it arrives, and its final
      // result is never emitted; weir emits every window once.
      m = m.withRetention(Duration.ofDays(1));
    }
    KTable<Windowed<String>, ?> t;
    if (str(s, "agg", "count").equals("reduce")) {
      @SuppressWarnings("unchecked")
      Materialized<String, String, WindowStore<Bytes, byte[]>> ms = (Materialized<String, String, WindowStore<Bytes, byte[]>>) (Materialized<?, ?, ?>) m;
      t = w.reduce((a, v) -> a + "," + v, ms);
    } else {
      @SuppressWarnings("unchecked")
      Materialized<String, Long, WindowStore<Bytes, byte[]>> ml = (Materialized<String, Long, WindowStore<Bytes, byte[]>>) (Materialized<?, ?, ?>) m;
      t = w.count(ml);
    }
    if (fin.equals("suppress")) {
      @SuppressWarnings("unchecked")
      KTable<Windowed<String>, Object> tt = (KTable<Windowed<String>, Object>) t;
      t = tt.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
    }
    return t;
  }

  static Topology topology(JsonNode s) {
    StreamsBuilder b = new StreamsBuilder();
    String op = s.get("op").asText();
    long grace = ms(s, "grace");
    switch (op) {
      case "aggregate": {
        KGroupedStream<String, String> g = grouped(input(b, s, "in"), s);
        KTable<String, ?> t = str(s, "agg", "count").equals("reduce")
            ? g.reduce((a, v) -> a + "," + v, Materialized.as("agg"))
            : g.count(Materialized.as("agg"));
        t.toStream().mapValues(Oracle::text).to("out", Produced.with(Serdes.String(), Serdes.String()));
        break;
      }
      case "tumbling":
      case "hopping": {
        long size = ms(s, "size");
        TimeWindows tw = TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(grace));
        if (op.equals("hopping")) {
          tw = tw.advanceBy(Duration.ofMillis(ms(s, "advance")));
        }
        windowedOut(aggregate(grouped(input(b, s, "in"), s).windowedBy(tw), s, "win"));
        break;
      }
      case "sliding": {
        SlidingWindows sw = SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(ms(s, "size")), Duration.ofMillis(grace));
        windowedOut(aggregate(grouped(input(b, s, "in"), s).windowedBy(sw), s, "win"));
        break;
      }
      case "session": {
        SessionWindows sw = SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(ms(s, "gap")), Duration.ofMillis(grace));
        SessionWindowedKStream<String, String> w = grouped(input(b, s, "in"), s).windowedBy(sw);
        KTable<Windowed<String>, ?> t = str(s, "agg", "count").equals("reduce")
            ? w.reduce((a, v) -> a + "," + v, Materialized.as("sess"))
            : w.count(Materialized.as("sess"));
        windowedOut(t);
        break;
      }
      case "stream-table":
      case "stream-table-left": {
        KStream<String, String> left = input(b, s, "left");
        if (s.path("rekey").asBoolean(false)) {
          left = left.selectKey((k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1));
        }
        KTable<String, String> right = b.table("right", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("right-store"));
        KStream<String, String> j = op.equals("stream-table")
            ? left.join(right, (v, vt) -> v + "+" + vt, Joined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            : left.leftJoin(right, (v, vt) -> v + "+" + vt, Joined.with(Serdes.String(), Serdes.String(), Serdes.String()));
        j.to("out", Produced.with(Serdes.String(), Serdes.String()));
        break;
      }
      case "table-table": {
        KTable<String, String> left = b.table("left", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("left-store"));
        KTable<String, String> right = b.table("right", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("right-store"));
        left.join(right, (v1, v2) -> v1 + "+" + v2).toStream().to("out", Produced.with(Serdes.String(), Serdes.String()));
        break;
      }
      case "stream-stream": {
        KStream<String, String> left = input(b, s, "left");
        KStream<String, String> right = input(b, s, "right");
        JoinWindows jw = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(ms(s, "before")), Duration.ofMillis(grace));
        if (s.has("after")) {
          jw = jw.after(Duration.ofMillis(ms(s, "after")));
        }
        left.join(right, (v1, v2) -> v1 + "+" + v2, jw, StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
        break;
      }
      case "stateless": {
        input(b, s, "in")
            .flatMapValues(v -> java.util.Arrays.asList(v.split(",", -1)))
            .mapValues(v -> v.toUpperCase())
            .to("out", Produced.with(Serdes.String(), Serdes.String()));
        break;
      }
      case "merge": {
        input(b, s, "left").merge(input(b, s, "right")).to("out", Produced.with(Serdes.String(), Serdes.String()));
        break;
      }
      case "table-filter":
      case "table-mapvalues": {
        KTable<String, String> t = b.table("in", Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("in-store"));
        if (op.equals("table-filter")) {
          String drop = str(s, "filter", "");
          if (s.path("materialize").asBoolean(false)) {
            t = t.filter((k, v) -> !drop.equals(v), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("filtered")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
          } else {
            t = t.filter((k, v) -> !drop.equals(v));
          }
        } else {
          t = t.mapValues(v -> v + "!");
        }
        t.toStream().to("out", Produced.with(Serdes.String(), Serdes.String()));
        break;
      }
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
    return b.build();
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
    try (TopologyTestDriver d = new TopologyTestDriver(topology(s), props, Instant.ofEpochMilli(0))) {
      Map<String, TestInputTopic<String, String>> ins = new HashMap<>();
      TestOutputTopic<String, String> o = d.createOutputTopic("out", new StringDeserializer(), new StringDeserializer());
      int i = 0;
      for (JsonNode r : s.get("inputs")) {
        String topic = str(r, "topic", "in");
        TestInputTopic<String, String> in = ins.computeIfAbsent(topic,
            t -> d.createInputTopic(t, new StringSerializer(), new StringSerializer()));
        // Emit-on-window-close looks for closed windows at most once a
        // second of wall-clock time: let a second pass before each record.
        d.advanceWallClockTime(Duration.ofSeconds(1));
        in.pipeInput(new TestRecord<>(str(r, "key", null), str(r, "value", null), Instant.ofEpochMilli(r.get("ts").asLong())));
        List<TestRecord<String, String>> got = o.readRecordsToList();
        for (TestRecord<String, String> rec : got) {
          ObjectNode n = JSON.createObjectNode();
          n.put("script", path);
          n.put("after", i);
          n.put("topic", "out");
          n.put("key", rec.key());
          n.put("value", rec.value());
          n.put("ts", rec.timestamp());
          out.println(JSON.writeValueAsString(n));
        }
        i++;
      }
    } finally {
      deleteTree(stateDir.toFile());
    }
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
