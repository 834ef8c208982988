package weirconformance;

import static weirconformance.Oracle.grouped;
import static weirconformance.Oracle.input;
import static weirconformance.Oracle.ms;
import static weirconformance.Oracle.str;
import static weirconformance.Oracle.text;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.WindowStore;

/** The aggregations: by key ("aggregate"), by time window and by session. */
final class Aggregations implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    long grace = ms(s, "grace");
    switch (op) {
      case "aggregate": {
        KGroupedStream<String, String> g = grouped(input(b, s, "in"), s);
        KTable<String, ?> t = str(s, "agg", "count").equals("reduce")
            ? g.reduce((a, v) -> a + "," + v, Materialized.as("agg"))
            : g.count(Materialized.as("agg"));
        t.toStream().mapValues(Oracle::text).to("out", Oracle.OUT);
        return true;
      }
      case "tumbling":
      case "hopping": {
        long size = ms(s, "size");
        TimeWindows tw = TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(grace));
        if (op.equals("hopping")) {
          tw = tw.advanceBy(Duration.ofMillis(ms(s, "advance")));
        }
        windowedOut(aggregate(grouped(input(b, s, "in"), s).windowedBy(tw), s, "win"));
        return true;
      }
      case "sliding": {
        SlidingWindows sw = SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(ms(s, "size")), Duration.ofMillis(grace));
        windowedOut(aggregate(grouped(input(b, s, "in"), s).windowedBy(sw), s, "win"));
        return true;
      }
      case "session": {
        SessionWindows sw = SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(ms(s, "gap")), Duration.ofMillis(grace));
        SessionWindowedKStream<String, String> w = grouped(input(b, s, "in"), s).windowedBy(sw);
        KTable<Windowed<String>, ?> t = str(s, "agg", "count").equals("reduce")
            ? w.reduce((a, v) -> a + "," + v, Materialized.as("sess"))
            : w.count(Materialized.as("sess"));
        windowedOut(t);
        return true;
      }
      default:
        return false;
    }
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

}
