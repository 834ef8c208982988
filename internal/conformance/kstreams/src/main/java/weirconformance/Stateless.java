package weirconformance;

import static weirconformance.Oracle.input;
import static weirconformance.Oracle.str;
import static weirconformance.Oracle.table;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;

/** The stateless operators and the table operators that keep the key. */
final class Stateless implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    switch (op) {
      case "stateless":
        input(b, s, "in")
            .flatMapValues(v -> java.util.Arrays.asList(v.split(",", -1)))
            .mapValues(v -> v.toUpperCase())
            .to("out", Oracle.OUT);
        return true;
      case "merge":
        input(b, s, "left").merge(input(b, s, "right")).to("out", Oracle.OUT);
        return true;
      case "table-filter":
      case "table-mapvalues": {
        KTable<String, String> t = table(b, "in", "in-store");
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
        t.toStream().to("out", Oracle.OUT);
        return true;
      }
      default:
        return false;
    }
  }
}
