package weirconformance;

import static weirconformance.Oracle.grouped;
import static weirconformance.Oracle.input;
import static weirconformance.Oracle.ms;
import static weirconformance.Oracle.str;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;

/**
 * Suppress ("suppress"): the table of "in" — or, with "size", the
 * tumbling-window count of "in" by key, with "gap" the session count —
 * suppressed until "limit" ms passed ("final": "suppress": until the
 * window closes), in a buffer of at most "maxRecords" records and
 * "maxBytes" bytes that emits early when full.
 */
final class Suppress implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    if (!op.equals("suppress")) {
      return false;
    }
    long maxRecords = ms(s, "maxRecords");
    long maxBytes = ms(s, "maxBytes");
    Suppressed.BufferConfig<?> buf;
    if (maxRecords > 0 && maxBytes > 0) {
      buf = Suppressed.BufferConfig.maxRecords(maxRecords).withMaxBytes(maxBytes);
    } else if (maxRecords > 0) {
      buf = Suppressed.BufferConfig.maxRecords(maxRecords);
    } else if (maxBytes > 0) {
      buf = Suppressed.BufferConfig.maxBytes(maxBytes);
    } else {
      buf = Suppressed.BufferConfig.unbounded();
    }
    boolean fin = str(s, "final", "").equals("suppress");
    long grace = ms(s, "grace");
    if (ms(s, "gap") > 0) {
      SessionWindows sw = SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(ms(s, "gap")), Duration.ofMillis(grace));
      KTable<Windowed<String>, Long> t = grouped(input(b, s, "in"), s).windowedBy(sw).count(Materialized.as("sess"));
      Aggregations.windowedOut(t.suppress(fin
          ? Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())
          : Suppressed.untilTimeLimit(Duration.ofMillis(ms(s, "limit")), buf)));
    } else if (ms(s, "size") > 0) {
      TimeWindows tw = TimeWindows.ofSizeAndGrace(Duration.ofMillis(ms(s, "size")), Duration.ofMillis(grace));
      KTable<Windowed<String>, Long> t = grouped(input(b, s, "in"), s).windowedBy(tw).count(Materialized.as("win"));
      Aggregations.windowedOut(t.suppress(fin
          ? Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())
          : Suppressed.untilTimeLimit(Duration.ofMillis(ms(s, "limit")), buf)));
    } else {
      KTable<String, String> t = Oracle.table(b, "in", "in-store");
      t.suppress(Suppressed.untilTimeLimit(Duration.ofMillis(ms(s, "limit")), buf)).toStream().to("out", Oracle.OUT);
    }
    return true;
  }
}
