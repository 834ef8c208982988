package weirconformance;

import static weirconformance.Oracle.input;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;

/** A stream read as a table: "to-table". */
final class StreamToTable implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    if (!op.equals("to-table")) {
      return false;
    }
    KStream<String, String> in = input(b, s, "in");
    if (s.path("rekey").asBoolean(false)) {
      in = in.selectKey((k, v) -> v == null || v.isEmpty() ? null : v.substring(0, 1));
    }
    Materialized<String, String, KeyValueStore<Bytes, byte[]>> m = s.path("materialize").asBoolean(false)
        ? Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("table-store")
        : Materialized.<String, String, KeyValueStore<Bytes, byte[]>>with(Serdes.String(), Serdes.String());
    in.toTable(m.withKeySerde(Serdes.String()).withValueSerde(Serdes.String())).toStream().to("out", Oracle.OUT);
    return true;
  }
}
