package weirconformance;

import static weirconformance.Oracle.input;
import static weirconformance.Oracle.ms;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;

/** The left and outer stream–stream joins. */
final class OuterJoins implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    if (!op.equals("stream-stream-left") && !op.equals("stream-stream-outer")) {
      return false;
    }
    KStream<String, String> left = input(b, s, "left");
    KStream<String, String> right = input(b, s, "right");
    JoinWindows jw = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(ms(s, "before")), Duration.ofMillis(ms(s, "grace")));
    if (s.has("after")) {
      jw = jw.after(Duration.ofMillis(ms(s, "after")));
    }
    StreamJoined<String, String, String> joined = StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String());
    KStream<String, String> j = op.equals("stream-stream-left")
        ? left.leftJoin(right, (v1, v2) -> v1 + "+" + v2, jw, joined)
        : left.outerJoin(right, (v1, v2) -> v1 + "+" + v2, jw, joined);
    j.to("out", Oracle.OUT);
    return true;
  }
}
