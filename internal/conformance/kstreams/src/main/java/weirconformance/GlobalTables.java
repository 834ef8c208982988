package weirconformance;

import static weirconformance.Oracle.input;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The global-table joins: stream "left" joined to global table "right" by
 * the value's first character (null for an empty or null value).
 */
final class GlobalTables implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    switch (op) {
      case "global-join":
      case "global-join-left": {
        KStream<String, String> left = input(b, s, "left");
        GlobalKTable<String, String> right = b.globalTable("right",
            Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("right-store"));
        KeyValueMapper<String, String, String> mapper =
            (k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1);
        ValueJoiner<String, String, String> joiner = (v, vg) -> v + "+" + vg;
        KStream<String, String> j = op.equals("global-join")
            ? left.join(right, mapper, joiner)
            : left.leftJoin(right, mapper, joiner);
        j.to("out", Oracle.OUT);
        return true;
      }
      default:
        return false;
    }
  }
}
