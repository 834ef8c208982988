package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/offsets"
)

func TestInspectPrintsBatches(t *testing.T) {
	dir := t.TempDir()
	wlog, err := offsets.Open(filepath.Join(dir, "offsets"), offsets.Options{})
	require.NoError(t, err)
	wal, err := wlog.Namespace("report")
	require.NoError(t, err)
	ctx := context.Background()
	tp := offsets.TopicPartition{Topic: "events", Partition: 2}
	at := time.UnixMilli(1_700_000_000_000)
	require.NoError(t, wal.WritePlan(ctx, offsets.Plan{Batch: 0, Timestamp: at, Trigger: "AvailableNow",
		Ranges: []offsets.Range{{TopicPartition: tp, Start: 0, End: 40}}}))
	require.NoError(t, wal.WriteCommit(ctx, offsets.Commit{Batch: 0, Timestamp: at.Add(time.Second)}))
	require.NoError(t, wal.WritePlan(ctx, offsets.Plan{Batch: 1, Timestamp: at.Add(2 * time.Second), Trigger: "AvailableNow",
		Ranges: []offsets.Range{{TopicPartition: tp, Start: 40, End: 90}}}))
	require.NoError(t, wlog.Close())

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(ctx, []string{"inspect", "--state-dir", dir}, &out, &errOut), errOut.String())
	text := out.String()
	require.Contains(t, text, "application report: 2 batches, 0 epochs")
	require.Contains(t, text, "batch 0")
	require.Contains(t, text, "events-2 [0, 40)")
	require.Contains(t, text, "batch 1")
	require.Contains(t, text, "PENDING")

	out.Reset()
	require.Equal(t, 0, run(ctx, []string{"inspect", "--state-dir", dir, "--json"}, &out, &errOut), errOut.String())
	var apps []inspectApp
	require.NoError(t, json.Unmarshal(out.Bytes(), &apps))
	require.Len(t, apps, 1)
	require.Len(t, apps[0].Batches, 2)
	require.True(t, apps[0].Batches[0].Committed)
	require.False(t, apps[0].Batches[1].Committed)
	require.Equal(t, int64(90), apps[0].Batches[1].Ranges[0].End)

	require.Equal(t, 2, run(ctx, []string{"inspect"}, &out, &errOut), "no --state-dir is a usage error")
}
