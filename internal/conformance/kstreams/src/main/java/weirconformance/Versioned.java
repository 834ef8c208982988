package weirconformance;

import static weirconformance.Oracle.input;
import static weirconformance.Oracle.ms;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/** Versioned tables and stream–table joins against them (KIP-889, 914, 923). */
final class Versioned implements Oracle.Family {
  /** The table of topic in a versioned store with the script's history retention. */
  static KTable<String, String> versionedTable(StreamsBuilder b, JsonNode s, String topic, String store) {
    return b.table(topic, Consumed.with(Serdes.String(), Serdes.String()),
        Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore(store, Duration.ofMillis(ms(s, "history"))))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
  }

  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    switch (op) {
      case "versioned-table": {
        KTable<String, String> t = versionedTable(b, s, "in", "table-store");
        String drop = Oracle.str(s, "filter", null);
        if (drop != null && s.path("materialize").asBoolean(false)) {
          t = t.filter((k, v) -> !drop.equals(v), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("filtered")
              .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        } else if (drop != null) {
          t = t.filter((k, v) -> !drop.equals(v));
        }
        t.toStream().to("out", Oracle.OUT);
        return true;
      }
      case "stream-table-versioned":
      case "stream-table-grace": {
        KStream<String, String> left = input(b, s, "left");
        if (s.path("rekey").asBoolean(false)) {
          left = left.selectKey((k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1));
        }
        KTable<String, String> right = versionedTable(b, s, "right", "right-store");
        Joined<String, String, String> joined = Joined.with(Serdes.String(), Serdes.String(), Serdes.String());
        if (op.equals("stream-table-grace")) {
          joined = joined.withGracePeriod(Duration.ofMillis(ms(s, "grace")));
        }
        KStream<String, String> j = s.path("left").asBoolean(false)
            ? left.leftJoin(right, (v, vt) -> v + "+" + vt, joined)
            : left.join(right, (v, vt) -> v + "+" + vt, joined);
        j.to("out", Oracle.OUT);
        return true;
      }
      case "table-table-versioned": {
        KTable<String, String> left = versionedTable(b, s, "left", "left-store");
        KTable<String, String> right = versionedTable(b, s, "right", "right-store");
        left.join(right, (v1, v2) -> v1 + "+" + v2).toStream().to("out", Oracle.OUT);
        return true;
      }
      case "table-table-versioned-left": {
        KTable<String, String> left = versionedTable(b, s, "left", "left-store");
        KTable<String, String> right = versionedTable(b, s, "right", "right-store");
        left.leftJoin(right, (v1, v2) -> v1 + "+" + v2).toStream().to("out", Oracle.OUT);
        return true;
      }
      case "table-table-versioned-outer": {
        KTable<String, String> left = versionedTable(b, s, "left", "left-store");
        KTable<String, String> right = versionedTable(b, s, "right", "right-store");
        left.outerJoin(right, (v1, v2) -> v1 + "+" + v2).toStream().to("out", Oracle.OUT);
        return true;
      }
      default:
        return false;
    }
  }
}
