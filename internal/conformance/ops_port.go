package conformance

import "github.com/weirstream/weir/examples/orders/pipeline"

// The ported applications: an example's whole topology, built with the
// script's prefix, against its Kafka Streams original in the oracle.
func init() {
	register(buildPortOrders, "port-orders")
}

// buildPortOrders is examples/orders: tables "customers" and "orders" in,
// "orders-by-region", "revenue-by-region" and "hourly-orders" out, every
// key and value a string.
func buildPortOrders(c *opBuild) {
	c.count = false
	pipeline.Build(c.b, c.prefix)
}
