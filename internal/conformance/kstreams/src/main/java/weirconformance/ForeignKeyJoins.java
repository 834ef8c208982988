package weirconformance;

import static weirconformance.Oracle.table;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The foreign-key table–table joins: table "left", whose values name the
 * foreign key before a colon ("x:payload" → "x"), joined with table
 * "right". The extractor reads key and value (KIP-1104).
 */
final class ForeignKeyJoins implements Oracle.Family {
  static String foreignKey(String k, String v) {
    int i = v.indexOf(':');
    return i < 0 ? v : v.substring(0, i);
  }

  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    boolean left;
    switch (op) {
      case "fk-join":
        left = false;
        break;
      case "fk-join-left":
        left = true;
        break;
      default:
        return false;
    }
    boolean versioned = s.has("history");
    KTable<String, String> l = versioned ? Versioned.versionedTable(b, s, "left", "left-store") : table(b, "left", "left-store");
    KTable<String, String> r = versioned ? Versioned.versionedTable(b, s, "right", "right-store") : table(b, "right", "right-store");
    Materialized<String, String, KeyValueStore<Bytes, byte[]>> m =
        s.path("materialize").asBoolean(false)
            ? Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("fk-join-store")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
            : Materialized.with(Serdes.String(), Serdes.String());
    KTable<String, String> j = left
        ? l.leftJoin(r, ForeignKeyJoins::foreignKey, (v, vo) -> v + "+" + vo, m)
        : l.join(r, ForeignKeyJoins::foreignKey, (v, vo) -> v + "+" + vo, m);
    j.toStream().to("out", Oracle.OUT);
    return true;
  }
}
