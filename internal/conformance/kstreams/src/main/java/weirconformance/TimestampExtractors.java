package weirconformance;

import static weirconformance.Oracle.grouped;
import static weirconformance.Oracle.ms;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.processor.TimestampExtractor;

/** The per-source timestamp extractor (Consumed.withTimestampExtractor). */
final class TimestampExtractors implements Oracle.Family {
  /**
   * A value "payload@ms" is stamped ms; a value without "@" (a tombstone
   * too) takes the partition time (-1, so dropped, while the partition has
   * none); a time that is not a number is -1. Kafka Streams drops a record
   * whose extracted timestamp is negative, as LogAndSkipOnInvalidTimestamp
   * does.
   */
  static final class At implements TimestampExtractor {
    @Override
    public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
      Object v = record.value();
      String text = v == null ? "" : v.toString();
      int i = text.lastIndexOf('@');
      if (i < 0) {
        return partitionTime;
      }
      try {
        return Long.parseLong(text.substring(i + 1));
      } catch (NumberFormatException e) {
        return -1;
      }
    }
  }

  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    if (!op.equals("timestamp-extractor")) {
      return false;
    }
    KStream<String, String> in = b.stream("in",
        Consumed.with(Serdes.String(), Serdes.String()).withTimestampExtractor(new At()));
    long size = ms(s, "size");
    if (size == 0) {
      in.to("out", Oracle.OUT);
      return true;
    }
    TimeWindows tw = TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), Duration.ofMillis(ms(s, "grace")));
    Aggregations.windowedOut(grouped(in, s).windowedBy(tw).count(Materialized.as("win")));
    return true;
  }
}
