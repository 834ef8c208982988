package weirconformance;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.time.Instant;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The Kafka Streams original of examples/orders ("port-orders"): orders
 * joined to customers by a foreign key, revenue per region, orders per
 * region and hour. build is the application as its team would write it;
 * weir's port is examples/orders/pipeline.
 */
final class OrdersPort implements Oracle.Family {
  @Override
  public boolean build(StreamsBuilder b, JsonNode s, String op) {
    if (!op.equals("port-orders")) {
      return false;
    }
    build(b);
    return true;
  }

  static void build(StreamsBuilder builder) {
    Consumed<String, String> strings = Consumed.with(Serdes.String(), Serdes.String());
    Produced<String, String> out = Produced.with(Serdes.String(), Serdes.String());
    KTable<String, String> customers = builder.table("customers", strings,
        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("customers-store"));
    KTable<String, String> orders = builder.table("orders", strings,
        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("orders-store"));

    // 1. Each order with its customer's region.
    KTable<String, String> byRegion = orders.join(customers, OrdersPort::customerOf,
        (order, customer) -> regionOf(customer) + "," + amountOf(order),
        TableJoined.as("orders-by-region"),
        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("orders-by-region-store")
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
    byRegion.toStream().to("orders-by-region", out);

    // 2. Revenue per region.
    byRegion
        .groupBy((id, joined) -> KeyValue.pair(joinedRegion(joined), amountOrNull(joined)),
            Grouped.with(Serdes.String(), Serdes.Long()))
        .aggregate(() -> 0L, (region, amount, sum) -> sum + amount, (region, amount, sum) -> sum - amount,
            Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("revenue-store")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .mapValues(sum -> Long.toString(sum))
        .toStream().to("revenue-by-region", out);

    // 3. Order updates per region and hour, one final count per hour.
    byRegion.toStream()
        .filter((id, joined) -> joined != null) // not cancellations
        .groupBy((id, joined) -> joinedRegion(joined), Grouped.with(Serdes.String(), Serdes.String()))
        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofHours(1), Duration.ofMinutes(10)))
        .count(Materialized.as("hourly-store"))
        .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
        .toStream()
        .map((w, n) -> KeyValue.pair(w.key() + "@" + Instant.ofEpochMilli(w.window().start()), Long.toString(n)))
        .to("hourly-orders", out);
  }

  /** The foreign key of an order "customerId,amount". */
  static String customerOf(String order) {
    int i = order.indexOf(',');
    return i < 0 ? order : order.substring(0, i);
  }

  /** The amount of an order "customerId,amount" (or of a joined order "region,amount"). */
  static String amountOf(String order) {
    int i = order.indexOf(',');
    return i < 0 ? "" : order.substring(i + 1);
  }

  /** The region of a customer "name,region". */
  static String regionOf(String customer) {
    int i = customer.indexOf(',');
    return i < 0 ? "" : customer.substring(i + 1);
  }

  /** The region of a joined order "region,amount". */
  static String joinedRegion(String joined) {
    int i = joined.indexOf(',');
    return i < 0 ? joined : joined.substring(0, i);
  }

  /** The amount of a joined order "region,amount"; null (no group) when it is not a whole number. */
  static Long amountOrNull(String joined) {
    try {
      return Long.parseLong(amountOf(joined));
    } catch (NumberFormatException e) {
      return null;
    }
  }
}
