// Package pipeline is the topology of the orders example: a small Kafka
// Streams application ported to weir operator for operator. The Kafka
// Streams original is internal/conformance/kstreams/.../OrdersPort.java; the
// conformance suite runs both on the same inputs (op "port-orders") and
// requires the same output records.
//
// Input topics (keys and values are strings):
//
//	customers  customer id → "name,region"
//	orders     order id    → "customerId,amount" (amount a whole number; a tombstone cancels the order)
//
// Output topics (keys and values are strings):
//
//	orders-by-region   order id → "region,amount": orders ⋈ customers on the order's customer id
//	revenue-by-region  region → the sum of its orders' amounts, kept right when an order is
//	                   cancelled or changed and when a customer moves to another region
//	hourly-orders      "region@hour" → how many order updates the region had in that hour
//	                   (hour as RFC 3339, UTC), one final count per window once it closes
package pipeline

import (
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The topics of the application.
const (
	Customers       = "customers"
	Orders          = "orders"
	OrdersByRegion  = "orders-by-region"
	RevenueByRegion = "revenue-by-region"
	HourlyOrders    = "hourly-orders"
)

// Outputs are the output topics, in the order the example prints them.
var Outputs = []string{OrdersByRegion, RevenueByRegion, HourlyOrders}

// Grace is how long after its end an hour still accepts late orders; the
// hour's final count is written once stream time passes end + Grace.
const Grace = 10 * time.Minute

// Topology returns the application's topology.
func Topology() (*topology.Topology, error) {
	b := topology.NewBuilder()
	Build(b, "")
	return b.Build()
}

// Build adds the application to b, with prefix before every topic and
// store name (so that several copies can share one builder, as the
// conformance suite's engine tests do).
func Build(b *topology.Builder, prefix string) {
	str := serde.String()
	customers := topology.NewTable(b, prefix+Customers, str, str, topology.Materialized(prefix+"customers-store"))
	orders := topology.NewTable(b, prefix+Orders, str, str, topology.Materialized(prefix+"orders-store"))

	// 1. Each order with its customer's region: a foreign-key join, kept
	// up to date when the order or the customer changes.
	byRegion := topology.JoinTablesOnForeignKey(orders, customers, CustomerOf,
		func(order, customer string) string { return RegionOf(customer) + "," + AmountOf(order) },
		topology.Materialized(prefix+"orders-by-region-store"))
	byRegion.ToStream().To(prefix + OrdersByRegion)

	// 2. Revenue per region: the joined table re-grouped by region. An
	// update subtracts the order's previous amount from its previous
	// region and adds the new one to its new region.
	revenue := topology.AggregateTable(
		topology.GroupTable(byRegion, RegionAmount),
		func() int64 { return 0 },
		func(_ string, amount, sum int64) int64 { return sum + amount },
		func(_ string, amount, sum int64) int64 { return sum - amount },
		serde.Int64(), topology.Materialized(prefix+"revenue-store"))
	topology.MapTableValues(revenue, func(_ string, sum int64) string { return strconv.FormatInt(sum, 10) }).
		ToStream().To(prefix + RevenueByRegion)

	// 3. Order updates per region and hour, one final count per hour. A
	// cancellation reaches a stream function as V's zero value, "".
	placed := byRegion.ToStream().Filter(func(_, joined string) bool { return joined != "" }) // not cancellations
	perRegion := topology.GroupBy(placed, func(_, joined string) string { return JoinedRegion(joined) })
	hourly := topology.WindowedBy(perRegion, topology.TumblingWindows(time.Hour).WithGrace(Grace)).
		Count(topology.Materialized(prefix+"hourly-store"), topology.EmitFinal())
	topology.Map(hourly.ToStream(), func(w topology.Windowed[string], n int64) (string, string) {
		return w.Key + "@" + w.Start.UTC().Format(time.RFC3339), strconv.FormatInt(n, 10)
	}).To(prefix + HourlyOrders)
}

// CustomerOf is the foreign key of an order "customerId,amount".
func CustomerOf(_, order string) string {
	id, _, _ := strings.Cut(order, ",")
	return id
}

// AmountOf is the amount of an order "customerId,amount" (or of a joined
// order "region,amount").
func AmountOf(order string) string {
	_, amount, _ := strings.Cut(order, ",")
	return amount
}

// RegionOf is the region of a customer "name,region".
func RegionOf(customer string) string {
	_, region, _ := strings.Cut(customer, ",")
	return region
}

// JoinedRegion is the region of a joined order "region,amount".
func JoinedRegion(joined string) string {
	region, _, _ := strings.Cut(joined, ",")
	return region
}

// RegionAmount groups a joined order "region,amount" under its region. An
// amount that is not a whole number puts the order in no group: it is
// dropped from the revenue and counted (processor.MetricDroppedNull), as
// Kafka Streams drops a re-grouped entry whose value maps to null.
func RegionAmount(_, joined string) (string, int64, bool) {
	amount, err := strconv.ParseInt(AmountOf(joined), 10, 64)
	return JoinedRegion(joined), amount, err == nil
}
