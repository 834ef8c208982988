package topology

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFKInstructions(t *testing.T) {
	x, y := []byte("x"), []byte("y")
	sent := func(fk []byte, op fkInstruction) fkSent { return fkSent{fk: fk, op: op} }
	for _, tc := range []struct {
		name           string
		left           bool
		hadOld, hasNew bool
		oldFK, newFK   []byte
		want           []fkSent
	}{
		{name: "inner insert", hasNew: true, newFK: x, want: []fkSent{sent(x, fkPropagateIfAvailable)}},
		{name: "inner update, same fk", hadOld: true, hasNew: true, oldFK: x, newFK: x, want: []fkSent{sent(x, fkPropagateIfAvailable)}},
		{name: "inner update, fk changed", hadOld: true, hasNew: true, oldFK: x, newFK: y,
			want: []fkSent{sent(x, fkDeleteNoPropagate), sent(y, fkPropagateNullIfAbsent)}},
		{name: "inner delete", hadOld: true, oldFK: x, want: []fkSent{sent(x, fkDeleteAndPropagate)}},
		{name: "inner delete of absent key"},
		{name: "left insert", left: true, hasNew: true, newFK: x, want: []fkSent{sent(x, fkPropagateNullIfAbsent)}},
		{name: "left update, same fk", left: true, hadOld: true, hasNew: true, oldFK: x, newFK: x,
			want: []fkSent{sent(x, fkPropagateNullIfAbsent)}},
		{name: "left update, fk changed", left: true, hadOld: true, hasNew: true, oldFK: x, newFK: y,
			want: []fkSent{sent(x, fkDeleteNoPropagate), sent(y, fkPropagateNullIfAbsent)}},
		{name: "left delete", left: true, hadOld: true, oldFK: x,
			want: []fkSent{sent(x, fkDeleteNoPropagate), sent(nil, fkPropagateNullIfAbsent)}},
		{name: "left delete of absent key", left: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, fkInstructions(tc.left, tc.hadOld, tc.hasNew, tc.oldFK, tc.newFK))
		})
	}
}

func TestFKWireRoundTrip(t *testing.T) {
	h := hashValue([]byte("x:1"))
	require.True(t, h.ok)
	require.Equal(t, h, hashValue([]byte("x:1")))
	require.NotEqual(t, h, hashValue([]byte("x:2")))
	require.Equal(t, fkHash{}, hashValue(nil))

	for _, s := range []subscription{
		{op: fkPropagateIfAvailable, hash: h, pk: []byte("a")},
		{op: fkDeleteAndPropagate, pk: []byte{}},
		{op: fkPropagateNullIfAbsent, hash: h, pk: []byte("a long primary key")},
	} {
		got, err := decodeSubscription(s.encode())
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	for _, r := range []response{
		{hash: h, found: true, value: []byte("X")},
		{hash: h, found: true, value: []byte{}}, // an empty foreign value is a value
		{found: false, value: nil},
	} {
		got, err := decodeResponse(r.encode())
		require.NoError(t, err)
		require.Equal(t, r, got)
	}
	got, err := decodeStoredSubscription(storedSubscription(h))
	require.NoError(t, err)
	require.Equal(t, h, got)

	// The subscription store's keys sort by foreign key, then primary key;
	// a foreign key is never taken for a prefix of a longer one.
	pk, ok := splitSubscriptionKey(subscriptionKey([]byte("x"), []byte("a")), subscriptionPrefix([]byte("x")))
	require.True(t, ok)
	require.Equal(t, []byte("a"), pk)
	_, ok = splitSubscriptionKey(subscriptionKey([]byte("xy"), []byte("a")), subscriptionPrefix([]byte("x")))
	require.False(t, ok)
}

func TestFKWireRejectsWhatItCannotRead(t *testing.T) {
	good := subscription{op: fkPropagateIfAvailable, hash: hashValue([]byte("v")), pk: []byte("a")}.encode()
	for name, b := range map[string][]byte{
		"empty":       nil,
		"version":     append([]byte{fkWireVersion + 1}, good[1:]...),
		"instruction": append([]byte{fkWireVersion, 9}, good[2:]...),
		"flags":       append([]byte{fkWireVersion, 2, 0x80}, good[3:]...),
		"short hash":  good[:10],
	} {
		_, err := decodeSubscription(b)
		require.Truef(t, errors.Is(err, errFKWire), "%s: %v", name, err)
	}
	for name, b := range map[string][]byte{
		"empty":      {},
		"version":    {fkWireVersion + 1, 0},
		"short hash": {fkWireVersion, fkFlagHash, 1, 2},
	} {
		_, err := decodeResponse(b)
		require.Truef(t, errors.Is(err, errFKWire), "%s: %v", name, err)
	}
}
