package weirconformance;

import static weirconformance.Oracle.grouped;
import static weirconformance.Oracle.str;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/** Record headers read and changed in the DSL, through processValues. */
final class HeaderOps implements Oracle.Family {
  /** Drops the records that have a header named drop. */
  static final class DropWithHeader implements FixedKeyProcessor<String, String, String> {
    final String drop;
    FixedKeyProcessorContext<String, String> ctx;

    DropWithHeader(String drop) {
      this.drop = drop;
    }

    @Override
    public void init(FixedKeyProcessorContext<String, String> ctx) {
      this.ctx = ctx;
    }

    @Override
    public void process(FixedKeyRecord<String, String> r) {
      if (r.headers().lastHeader(drop) == null) {
        ctx.forward(r);
      }
    }
  }

  /**
   * Appends the last "trace" header to the value ("-" without one) and sets
   * the header "seen" to the old value.
   */
  static final class Trace implements FixedKeyProcessor<String, String, String> {
    FixedKeyProcessorContext<String, String> ctx;

    @Override
    public void init(FixedKeyProcessorContext<String, String> ctx) {
      this.ctx = ctx;
    }

    @Override
    public void process(FixedKeyRecord<String, String> r) {
      Header t = r.headers().lastHeader("trace");
      String trace = t == null || t.value() == null ? "-" : new String(t.value(), StandardCharsets.UTF_8);
      String v = r.value() == null ? "" : r.value();
      Headers h = new RecordHeaders(r.headers().toArray());
      h.remove("seen");
      h.add("seen", v.getBytes(StandardCharsets.UTF_8));
      ctx.forward(r.withValue(v + "|" + trace).withHeaders(h));
    }
  }

  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    if (!op.equals("headers")) {
      return false;
    }
    KStream<String, String> in = b.stream("in", Consumed.with(Serdes.String(), Serdes.String()));
    String drop = str(s, "filter", null);
    if (drop != null) {
      in = in.processValues(() -> new DropWithHeader(drop));
    }
    KStream<String, String> traced = in.processValues(Trace::new);
    if (!str(s, "agg", "").equals("count")) {
      traced.to("out", Oracle.OUT);
      return true;
    }
    grouped(traced, s).count(Materialized.as("agg")).toStream().mapValues(Oracle::text).to("out", Oracle.OUT);
    return true;
  }
}
