package offsets

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPlanRoundTrip(t *testing.T) {
	plans := []Plan{
		{},
		plan(0),
		plan(12345),
		{Batch: math.MaxInt64, Ranges: []Range{rng("t", math.MaxInt32, 0, math.MaxInt64)}, Trigger: strings.Repeat("x", 300)},
		{Batch: 1, Timestamp: ms(-5), Watermark: ms(math.MinInt64)},
	}
	for _, p := range plans {
		b, err := p.MarshalBinary()
		require.NoError(t, err)
		require.Equal(t, byte(formatV1), b[0])
		var got Plan
		require.NoError(t, got.UnmarshalBinary(b))
		require.Equal(t, p, got)
	}
}

func TestTimesKeepMilliseconds(t *testing.T) {
	local := time.FixedZone("X", 3600)
	p := Plan{
		Timestamp: time.Date(2025, 3, 1, 12, 0, 0, 123_456_789, local),
		Watermark: time.Now(), // with a monotonic reading
	}
	b, err := p.MarshalBinary()
	require.NoError(t, err)
	var got Plan
	require.NoError(t, got.UnmarshalBinary(b))
	require.Equal(t, time.Date(2025, 3, 1, 11, 0, 0, 123_000_000, time.UTC), got.Timestamp)
	require.Equal(t, time.UnixMilli(p.Watermark.UnixMilli()).UTC(), got.Watermark)

	// The zero Time comes back as the zero Time.
	b, err = Plan{}.MarshalBinary()
	require.NoError(t, err)
	require.NoError(t, got.UnmarshalBinary(b))
	require.True(t, got.Timestamp.IsZero())
	require.Equal(t, time.Time{}, got.Timestamp)
}

func TestCommitAndEpochRoundTrip(t *testing.T) {
	for _, c := range []Commit{{}, commit(7), {Batch: math.MaxInt64, Timestamp: ms(1)}} {
		b, err := c.MarshalBinary()
		require.NoError(t, err)
		var got Commit
		require.NoError(t, got.UnmarshalBinary(b))
		require.Equal(t, c, got)
	}
	for _, e := range []Epoch{{}, epoch(0), epoch(99), {Epoch: 5, Offsets: []PartitionOffset{{TopicPartition{"a", 0}, 1}, {TopicPartition{"b", 0}, 2}}}} {
		b, err := e.MarshalBinary()
		require.NoError(t, err)
		var got Epoch
		require.NoError(t, got.UnmarshalBinary(b))
		require.Equal(t, e, got)
	}
}

func TestAppendBinaryAppends(t *testing.T) {
	b, err := plan(1).AppendBinary([]byte("prefix"))
	require.NoError(t, err)
	require.Equal(t, "prefix", string(b[:6]))
	var got Plan
	require.NoError(t, got.UnmarshalBinary(b[6:]))
	require.Equal(t, plan(1), got)
}

func TestDecodeDoesNotAlias(t *testing.T) {
	b, err := plan(1).MarshalBinary()
	require.NoError(t, err)
	var got Plan
	require.NoError(t, got.UnmarshalBinary(b))
	clear(b)
	require.Equal(t, plan(1), got)
}

// uv appends unsigned varints, to forge records by hand.
func uv(b []byte, vs ...uint64) []byte {
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func TestDecodeRejects(t *testing.T) {
	good, err := plan(3).MarshalBinary()
	require.NoError(t, err)
	// header: version, batch 0, two zero-ish times, empty trigger.
	head := uv([]byte{formatV1}, 0, 0, 0, 0)

	cases := map[string][]byte{
		"empty":               nil,
		"version 0":           append([]byte{0}, good[1:]...),
		"version 2":           append([]byte{2}, good[1:]...),
		"trailing byte":       append(append([]byte(nil), good...), 0),
		"non-minimal varint":  {formatV1, 0x80, 0x00, 0, 0, 0, 0},
		"varint overflow":     {formatV1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"batch over int64":    uv([]byte{formatV1}, math.MaxUint64),
		"trigger too long":    uv([]byte{formatV1}, 0, 0, 0, 1000),
		"absurd topic count":  uv(head, 1<<40),
		"absurd range count":  append(uv(head, 1, 1), append([]byte("t"), uv(nil, 1<<40)...)...),
		"empty topic group":   append(uv(head, 1, 1), append([]byte("t"), uv(nil, 0)...)...),
		"end before start":    append(uv(head, 1, 1), append([]byte("t"), uv(nil, 1, 0, 5, 4)...)...),
		"partition over i32":  append(uv(head, 1, 1), append([]byte("t"), uv(nil, 1, math.MaxInt32+1, 0, 0)...)...),
		"empty topic name":    uv(head, 1, 0, 1, 0, 0, 0),
		"unsorted partitions": append(uv(head, 1, 1), append([]byte("t"), uv(nil, 2, 1, 0, 0, 0, 0, 0)...)...),
		"unsorted topics": append(append(uv(head, 2, 1), append([]byte("b"), uv(nil, 1, 0, 0, 0)...)...),
			append(uv(nil, 1), append([]byte("a"), uv(nil, 1, 0, 0, 0)...)...)...),
		"same topic twice": append(append(uv(head, 2, 1), append([]byte("a"), uv(nil, 1, 0, 0, 0)...)...),
			append(uv(nil, 1), append([]byte("a"), uv(nil, 1, 1, 0, 0)...)...)...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			p := plan(9)
			err := p.UnmarshalBinary(b)
			require.ErrorIs(t, err, ErrCorrupt)
			require.True(t, strings.HasPrefix(err.Error(), "offsets: corrupt record: plan: "), err.Error())
			require.Equal(t, plan(9), p, "a failed decode leaves the plan unchanged")
		})
	}

	// Every proper prefix of a valid record is truncated.
	for i := range len(good) {
		var p Plan
		require.ErrorIs(t, p.UnmarshalBinary(good[:i]), ErrCorrupt, "prefix of %d bytes", i)
	}
	c, err := commit(5).MarshalBinary()
	require.NoError(t, err)
	for i := range len(c) {
		var got Commit
		require.ErrorIs(t, got.UnmarshalBinary(c[:i]), ErrCorrupt)
	}
	var got Commit
	require.ErrorIs(t, got.UnmarshalBinary(append(c, 1)), ErrCorrupt)
	e, err := epoch(5).MarshalBinary()
	require.NoError(t, err)
	for i := range len(e) {
		var got Epoch
		require.ErrorIs(t, got.UnmarshalBinary(e[:i]), ErrCorrupt)
	}
	var ge Epoch
	require.ErrorIs(t, ge.UnmarshalBinary(append(e, 1)), ErrCorrupt)
	require.ErrorIs(t, ge.UnmarshalBinary(uv([]byte{formatV1}, 0, 0, 1<<50)), ErrCorrupt)
}

// checkStable is the fuzz property: decoding never panics, fails only with
// ErrCorrupt, and a decoded record encodes back to exactly the input (the
// encoding is canonical), which decodes to the same record.
func checkStable[T any, P interface {
	*T
	UnmarshalBinary([]byte) error
}](t *testing.T, b []byte, marshal func(T) ([]byte, error)) {
	var v T
	if err := P(&v).UnmarshalBinary(b); err != nil {
		require.ErrorIs(t, err, ErrCorrupt)
		return
	}
	enc, err := marshal(v)
	require.NoError(t, err)
	require.Equal(t, b, enc)
	var again T
	require.NoError(t, P(&again).UnmarshalBinary(enc))
	require.Equal(t, v, again)
}

func addSeeds(f *testing.F, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{formatV1})
	f.Add([]byte{2, 0, 0})
	f.Add([]byte{formatV1, 0x80, 0x00})
	f.Add(uv([]byte{formatV1}, 0, 0, 0, 1<<40))
}

func mustMarshal(f *testing.F, m interface{ MarshalBinary() ([]byte, error) }) []byte {
	b, err := m.MarshalBinary()
	require.NoError(f, err)
	return b
}

func FuzzUnmarshalPlan(f *testing.F) {
	addSeeds(f,
		mustMarshal(f, Plan{}),
		mustMarshal(f, plan(1)),
		mustMarshal(f, plan(1<<40)),
		mustMarshal(f, Plan{Batch: 2, Ranges: []Range{rng("a", 0, 1, 2), rng("b", 7, 0, math.MaxInt64)}, Trigger: "AvailableNow"}),
	)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStable[Plan](t, b, Plan.MarshalBinary)
	})
}

func FuzzUnmarshalCommit(f *testing.F) {
	addSeeds(f, mustMarshal(f, Commit{}), mustMarshal(f, commit(3)), mustMarshal(f, Commit{Batch: math.MaxInt64, Timestamp: ms(-1)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStable[Commit](t, b, Commit.MarshalBinary)
	})
}

func FuzzUnmarshalEpoch(f *testing.F) {
	addSeeds(f, mustMarshal(f, Epoch{}), mustMarshal(f, epoch(1)), mustMarshal(f, epoch(1<<33)))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStable[Epoch](t, b, Epoch.MarshalBinary)
	})
}
