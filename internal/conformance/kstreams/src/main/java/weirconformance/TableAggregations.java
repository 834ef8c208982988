package weirconformance;

import static weirconformance.Oracle.ms;
import static weirconformance.Oracle.str;
import static weirconformance.Oracle.table;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;

/** The aggregations of a table re-grouped by a new key ("table-groupby"). */
final class TableAggregations implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    if (!op.equals("table-groupby")) {
      return false;
    }
    // The group is the value's first character; a value starting with "-"
    // maps to a null key, one starting with "_" to a null value.
    KGroupedTable<String, String> g;
    if (s.has("gap")) {
      // The session count of stream "in", re-grouped by the key's first
      // character with the value "<key>:<count>".
      SessionWindows sw = SessionWindows.ofInactivityGapAndGrace(
          Duration.ofMillis(ms(s, "gap")), Duration.ofMillis(ms(s, "grace")));
      KTable<Windowed<String>, Long> sessions = b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
          .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
          .windowedBy(sw)
          .count(Materialized.as("sessions"));
      g = sessions.groupBy(
          (w, n) -> KeyValue.pair(w.key().substring(0, 1), w.key() + ":" + n),
          Grouped.with(Serdes.String(), Serdes.String()));
    } else {
      KTable<String, String> in = table(b, "in", "in-store");
      String drop = str(s, "filter", null);
      if (drop != null) {
        in = in.filter((k, v) -> !drop.equals(v));
      }
      g = in.groupBy(
          (k, v) -> KeyValue.pair(v.startsWith("-") ? null : v.substring(0, 1), v.startsWith("_") ? null : v),
          Grouped.with(Serdes.String(), Serdes.String()));
    }
    KTable<String, ?> t;
    switch (str(s, "agg", "count")) {
      case "reduce":
        t = g.reduce((a, v) -> a + "+" + v, (a, v) -> a + "-" + v, Materialized.as("agg"));
        break;
      case "aggregate":
        t = g.aggregate(() -> "0", (k, v, a) -> a + "+" + v, (k, v, a) -> a + "-" + v,
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("agg")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        break;
      default:
        t = g.count(Materialized.as("agg"));
    }
    t.toStream().mapValues(Oracle::text).to("out", Oracle.OUT);
    return true;
  }
}
