package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

func TestInspectStoresAndGet(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerstore.Open(filepath.Join(dir, "stores"), badgerstore.Options{})
	require.NoError(t, err)
	count, _ := serde.Int64().Serialize("", 7)
	p, err := kafka.PartitionForKey([]byte("stream"), 4)
	require.NoError(t, err)
	require.NoError(t, db.Apply([]badgerstore.Change{
		{Store: "counts", Partition: p, Kind: statestore.KindKeyValue, Key: []byte("stream"), Value: count},
		{Store: "per-minute", Partition: 1, Kind: statestore.KindWindow,
			Key: statestore.EncodeWindowKey([]byte("ann"), time.UnixMilli(60_000)), Value: []byte("3 clicks")},
	}, map[badgerstore.StorePartition]badgerstore.Position{{Store: "counts", Partition: p}: {Offset: 42}}))
	require.NoError(t, db.Close())
	ctx := context.Background()

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"inspect", "stores", "--state-dir", dir}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "store counts partition")
	require.Contains(t, out.String(), "key-value  1 rows  changelog checkpoint 42")
	require.Contains(t, out.String(), "store per-minute partition 1  window  1 rows  no checkpoint")

	out.Reset()
	require.Equal(t, 0, run(ctx, []string{"inspect", "stores", "--state-dir", dir, "--json"}, &out, &errOut), errOut.String())
	var stores []inspectStore
	require.NoError(t, json.Unmarshal(out.Bytes(), &stores))
	require.Len(t, stores, 2)
	require.Equal(t, int64(42), *stores[0].Checkpoint)

	// The partition computed from the key, as producers pick it.
	out.Reset()
	require.Equal(t, 0, run(ctx, []string{"inspect", "get", "--state-dir", dir, "--store", "counts", "--partitions", "4", "--key", "stream"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "int64 7")
	out.Reset()
	require.Equal(t, 0, run(ctx, []string{"inspect", "get", "--state-dir", dir, "--store", "per-minute", "--partition", "1", "--key", "ann"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), `window start 60000: "3 clicks"`)

	errOut.Reset()
	require.Equal(t, 1, run(ctx, []string{"inspect", "get", "--state-dir", dir, "--store", "counts", "--partition", fmt.Sprint(p), "--key", "durian"}, &out, &errOut))
	require.Contains(t, errOut.String(), `no key "durian"`)
	errOut.Reset()
	require.Equal(t, 1, run(ctx, []string{"inspect", "get", "--state-dir", dir, "--store", "nope", "--partition", "0", "--key", "x"}, &out, &errOut))
	require.Contains(t, errOut.String(), `no store "nope"`)
	require.Equal(t, 2, run(ctx, []string{"inspect", "get", "--state-dir", dir, "--store", "counts", "--key", "x"}, &out, &errOut), "no partition is a usage error")
	require.Equal(t, 2, run(ctx, []string{"inspect", "get", "--state-dir", dir, "--store", "counts", "--partition", "0", "--int64", "--key", "x"}, &out, &errOut))
}
