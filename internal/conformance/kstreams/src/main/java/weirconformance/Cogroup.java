package weirconformance;

import static weirconformance.Oracle.grouped;
import static weirconformance.Oracle.input;
import static weirconformance.Oracle.ms;
import static weirconformance.Oracle.str;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Cogroup ("cogroup"): the streams "left" and "right" grouped by key
 * ("rekey" re-keys "left" only) and aggregated into one string per key,
 * "L:v;" for a left record and "R:v;" for a right one; not windowed, or in
 * time windows ("size", "advance", "window": "sliding") or sessions ("gap").
 */
final class Cogroup implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    if (!op.equals("cogroup")) {
      return false;
    }
    long grace = ms(s, "grace");
    long size = ms(s, "size");
    long gap = ms(s, "gap");
    KGroupedStream<String, String> left = grouped(input(b, s, "left"), s);
    KGroupedStream<String, String> right = input(b, s, "right").groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
    CogroupedKStream<String, String> c = left.<String>cogroup((k, v, a) -> a + "L:" + v + ";")
        .cogroup(right, (k, v, a) -> a + "R:" + v + ";");
    Initializer<String> init = () -> "";
    if (gap > 0) {
      SessionWindows sw = SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(gap), Duration.ofMillis(grace));
      Aggregations.windowedOut(c.windowedBy(sw).aggregate(init, (k, a1, a2) -> a1 + a2,
          Materialized.<String, String, SessionStore<Bytes, byte[]>>as("cog")
              .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())));
    } else if (size > 0) {
      Materialized<String, String, WindowStore<Bytes, byte[]>> m = Materialized.<String, String, WindowStore<Bytes, byte[]>>as("cog")
          .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
      KTable<Windowed<String>, String> t;
      if (str(s, "window", "").equals("sliding")) {
        t = c.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(size), Duration.ofMillis(grace))).aggregate(init, m);
      } else {
        TimeWindows tw = TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(grace));
        if (ms(s, "advance") > 0) {
          tw = tw.advanceBy(Duration.ofMillis(ms(s, "advance")));
        }
        t = c.windowedBy(tw).aggregate(init, m);
      }
      Aggregations.windowedOut(t);
    } else {
      c.aggregate(init, Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cog")
              .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
          .toStream().to("out", Oracle.OUT);
    }
    return true;
  }
}
