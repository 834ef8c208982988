package weirconformance;

import static weirconformance.Oracle.input;
import static weirconformance.Oracle.ms;
import static weirconformance.Oracle.table;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;

/** The joins: stream–table, table–table and stream–stream. */
final class Joins implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    switch (op) {
      case "stream-table":
      case "stream-table-left": {
        KStream<String, String> left = input(b, s, "left");
        if (s.path("rekey").asBoolean(false)) {
          left = left.selectKey((k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1));
        }
        KTable<String, String> right = table(b, "right", "right-store");
        KStream<String, String> j = op.equals("stream-table")
            ? left.join(right, (v, vt) -> v + "+" + vt, Joined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            : left.leftJoin(right, (v, vt) -> v + "+" + vt, Joined.with(Serdes.String(), Serdes.String(), Serdes.String()));
        j.to("out", Oracle.OUT);
        return true;
      }
      case "table-table": {
        KTable<String, String> left = table(b, "left", "left-store");
        KTable<String, String> right = table(b, "right", "right-store");
        left.join(right, (v1, v2) -> v1 + "+" + v2).toStream().to("out", Oracle.OUT);
        return true;
      }
      case "table-table-left": {
        KTable<String, String> left = table(b, "left", "left-store");
        KTable<String, String> right = table(b, "right", "right-store");
        (s.path("materialize").asBoolean(false)
            ? left.leftJoin(right, (v1, v2) -> v1 + "+" + v2, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("join-store")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            : left.leftJoin(right, (v1, v2) -> v1 + "+" + v2)).toStream().to("out", Oracle.OUT);
        return true;
      }
      case "table-table-outer": {
        KTable<String, String> left = table(b, "left", "left-store");
        KTable<String, String> right = table(b, "right", "right-store");
        (s.path("materialize").asBoolean(false)
            ? left.outerJoin(right, (v1, v2) -> v1 + "+" + v2, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("join-store")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            : left.outerJoin(right, (v1, v2) -> v1 + "+" + v2)).toStream().to("out", Oracle.OUT);
        return true;
      }
      case "stream-stream": {
        KStream<String, String> left = input(b, s, "left");
        KStream<String, String> right = input(b, s, "right");
        JoinWindows jw = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(ms(s, "before")), Duration.ofMillis(ms(s, "grace")));
        if (s.has("after")) {
          jw = jw.after(Duration.ofMillis(ms(s, "after")));
        }
        left.join(right, (v1, v2) -> v1 + "+" + v2, jw, StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            .to("out", Oracle.OUT);
        return true;
      }
      default:
        return false;
    }
  }
}
