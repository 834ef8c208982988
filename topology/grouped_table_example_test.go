package topology_test

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// Users per region, from a table of each user's region: a user moving
// leaves one region's count and joins the other's; a deleted user leaves.
func ExampleGroupTable() {
	b := topology.NewBuilder()
	regions := topology.NewTable(b, "user-regions", serde.String(), serde.String())
	byRegion := topology.GroupTable(regions, func(user, region string) (string, string, bool) {
		return region, user, region != "" // no region: counted nowhere
	})
	byRegion.Count(topology.Materialized("users-per-region")).ToStream().To("region-counts")
	topo, err := b.Build()
	if err != nil {
		fmt.Println(err)
		return
	}

	d, _ := topologytest.New(topo, topologytest.Config{})
	defer d.Close()
	in := topologytest.Input(d, "user-regions", serde.String(), serde.String())
	_ = in.Pipe("alice", "eu", time.UnixMilli(1))
	_ = in.Pipe("bob", "eu", time.UnixMilli(2))
	_ = in.Pipe("alice", "us", time.UnixMilli(3))
	_ = in.PipeTombstone("bob", time.UnixMilli(4))
	out, _ := topologytest.Output(d, "region-counts", serde.String(), serde.Int64()).ReadKeyValues()
	for _, kv := range out {
		fmt.Println(kv.Key, kv.Value)
	}
	// Output:
	// eu 1
	// eu 2
	// eu 1
	// us 1
	// eu 0
}
