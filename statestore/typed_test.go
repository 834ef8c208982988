package statestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// stringCodec and int64Codec are local test codecs; serde is not imported, to
// keep the dependency graph flat.
type stringCodec struct{}

func (stringCodec) Serialize(_ string, v string) ([]byte, error) { return []byte(v), nil }
func (stringCodec) Deserialize(_ string, b []byte) (string, error) {
	return string(b), nil
}

type int64Codec struct{}

func (int64Codec) Serialize(_ string, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
}

func (int64Codec) Deserialize(_ string, b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("int64: %d bytes", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// failCodec fails on the value "bad", and records the topics it is given.
type failCodec struct{ topics *[]string }

var errCodec = errors.New("codec says no")

func (c failCodec) Serialize(topic string, v string) ([]byte, error) {
	*c.topics = append(*c.topics, topic)
	if v == "bad" {
		return nil, errCodec
	}
	return []byte(v), nil
}

func (c failCodec) Deserialize(topic string, b []byte) (string, error) {
	*c.topics = append(*c.topics, topic)
	if string(b) == "bad" {
		return "", errCodec
	}
	return string(b), nil
}

// bytesCodec encodes nil as nil: a tombstone.
type bytesCodec struct{}

func (bytesCodec) Serialize(_ string, v []byte) ([]byte, error)   { return v, nil }
func (bytesCodec) Deserialize(_ string, b []byte) ([]byte, error) { return b, nil }

type kvPair struct {
	k string
	v int64
}

func drainTyped(t *testing.T, it *KVIterator[string, int64]) []kvPair {
	t.Helper()
	var out []kvPair
	for it.Next() {
		out = append(out, kvPair{it.Key(), it.Value()})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

func TestKV(t *testing.T) {
	counts := NewKV[string, int64](NewInMemoryKeyValue("counts"), stringCodec{}, int64Codec{})
	require.Equal(t, "counts", counts.Store().Name())

	_, ok, err := counts.Get("a")
	require.NoError(t, err)
	require.False(t, ok)
	for i, k := range []string{"b", "a", "ab", "c", "ba"} {
		require.NoError(t, counts.Put(k, int64(i-2)))
	}
	n, ok, err := counts.Get("c")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(1), n)
	require.NoError(t, counts.Put("c", 42))
	n, _, _ = counts.Get("c")
	require.Equal(t, int64(42), n)

	require.Equal(t, []kvPair{{"a", -1}, {"ab", 0}, {"b", -2}, {"ba", 2}, {"c", 42}}, drainTyped(t, must(counts.All())))
	require.Equal(t, []kvPair{{"ab", 0}, {"b", -2}}, drainTyped(t, must(counts.Range("ab", "ba"))))
	require.Empty(t, drainTyped(t, must(counts.Range("a", ""))), "an empty upper bound is a bound")
	require.Equal(t, []kvPair{{"a", -1}, {"ab", 0}}, drainTyped(t, must(counts.PrefixScan("a"))))

	require.NoError(t, counts.Delete("a"))
	require.NoError(t, counts.Delete("a"))
	_, ok, _ = counts.Get("a")
	require.False(t, ok)
}

func TestKVCodecErrors(t *testing.T) {
	var topics []string
	store := NewInMemoryKeyValue("words")
	kv := NewKV[string, string](store, failCodec{&topics}, failCodec{&topics})

	err := kv.Put("bad", "v")
	require.ErrorIs(t, err, errCodec)
	require.EqualError(t, err, "statestore: words: serialize key: codec says no")
	err = kv.Put("k", "bad")
	require.ErrorIs(t, err, errCodec)
	require.EqualError(t, err, "statestore: words: serialize value: codec says no")
	_, _, err = kv.Get("bad")
	require.ErrorIs(t, err, errCodec)
	require.ErrorIs(t, kv.Delete("bad"), errCodec)
	_, err = kv.Range("bad", "z")
	require.ErrorIs(t, err, errCodec)
	_, err = kv.Range("a", "bad")
	require.ErrorIs(t, err, errCodec)
	_, err = kv.PrefixScan("bad")
	require.ErrorIs(t, err, errCodec)

	// Bytes that do not decode.
	require.NoError(t, store.Put([]byte("k"), []byte("bad")))
	_, _, err = kv.Get("k")
	require.EqualError(t, err, "statestore: words: deserialize value: codec says no")
	require.NoError(t, store.Put([]byte("a"), []byte("fine")))
	require.NoError(t, store.Put([]byte("bad"), []byte("fine")))
	it, err := kv.All()
	require.NoError(t, err)
	require.True(t, it.Next())
	require.Equal(t, "a", it.Key())
	require.False(t, it.Next(), "a key that does not decode ends the iteration")
	require.EqualError(t, it.Err(), "statestore: words: deserialize key: codec says no")
	require.Empty(t, it.Key())
	require.False(t, it.Next())
	require.NoError(t, it.Close())

	for _, topic := range topics {
		require.Equal(t, "words", topic, "codecs get the store name as topic")
	}
}

func TestKVTombstoneAndStoreErrors(t *testing.T) {
	store := NewInMemoryKeyValue("raw")
	kv := NewKV[string, []byte](store, stringCodec{}, bytesCodec{})
	require.NoError(t, kv.Put("k", []byte("v")))
	require.NoError(t, kv.Put("k", nil), "a nil encoding is a tombstone")
	_, ok, err := kv.Get("k")
	require.NoError(t, err)
	require.False(t, ok)

	require.NoError(t, store.Close())
	require.ErrorIs(t, kv.Put("k", []byte("v")), ErrClosed)
	_, _, err = kv.Get("k")
	require.ErrorIs(t, err, ErrClosed)
	_, err = kv.All()
	require.ErrorIs(t, err, ErrClosed)
}

func TestTypedViewsNilArguments(t *testing.T) {
	kv := NewKV[string, int64](nil, stringCodec{}, int64Codec{})
	require.EqualError(t, kv.Put("a", 1), "statestore: KV: nil store")
	_, err := kv.All()
	require.Error(t, err)
	kv = NewKV[string, int64](NewInMemoryKeyValue("s"), nil, int64Codec{})
	_, _, err = kv.Get("a")
	require.EqualError(t, err, `statestore: KV over "s": nil key codec`)
	kv = NewKV[string, int64](NewInMemoryKeyValue("s"), stringCodec{}, nil)
	require.EqualError(t, kv.Delete("a"), `statestore: KV over "s": nil value codec`)

	w := NewWindowed[string, int64](nil, stringCodec{}, int64Codec{})
	require.EqualError(t, w.Put("a", ms(0), 1), "statestore: Windowed: nil store")
	_, err = w.FetchAll(ms(0), ms(1))
	require.Error(t, err)
	require.Error(t, w.ExpireBefore(ms(0)))

	ss := NewSessions[string, int64](NewInMemorySession("s"), stringCodec{}, nil)
	require.EqualError(t, ss.Put("a", ms(0), ms(1), 1), `statestore: Sessions over "s": nil value codec`)
	require.Error(t, ss.ExpireBefore(ms(0)))
}

type winPair struct {
	k     string
	start int64
	v     int64
}

func drainWindowed(t *testing.T, it *WindowedIterator[string, int64]) []winPair {
	t.Helper()
	var out []winPair
	for it.Next() {
		out = append(out, winPair{it.Key(), it.Window().UnixMilli(), it.Value()})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

func TestWindowed(t *testing.T) {
	w := NewWindowed[string, int64](NewInMemoryWindow("w"), stringCodec{}, int64Codec{})
	require.Equal(t, "w", w.Store().Name())
	require.NoError(t, w.Put("b", ms(0), 1))
	require.NoError(t, w.Put("a", ms(10), 2))
	require.NoError(t, w.Put("a", ms(0), 3))
	require.NoError(t, w.Put("a", ms(20), 4))

	v, ok, err := w.Get("a", ms(10))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(2), v)
	_, ok, err = w.Get("a", ms(5))
	require.NoError(t, err)
	require.False(t, ok)

	require.Equal(t, []winPair{{"a", 0, 3}, {"a", 10, 2}}, drainWindowed(t, must(w.Fetch("a", ms(0), ms(10)))))
	require.Equal(t, []winPair{{"a", 0, 3}, {"a", 10, 2}, {"a", 20, 4}, {"b", 0, 1}}, drainWindowed(t, must(w.FetchAll(ms(0), ms(100)))))

	require.NoError(t, w.Delete("a", ms(10)))
	require.NoError(t, w.ExpireBefore(ms(10)))
	require.Equal(t, []winPair{{"a", 20, 4}}, drainWindowed(t, must(w.FetchAll(ms(0), ms(100)))))

	// Codec errors.
	var topics []string
	bad := NewWindowed[string, string](w.Store(), failCodec{&topics}, failCodec{&topics})
	require.ErrorIs(t, bad.Put("bad", ms(0), "v"), errCodec)
	require.ErrorIs(t, bad.Put("k", ms(0), "bad"), errCodec)
	require.ErrorIs(t, bad.Delete("bad", ms(0)), errCodec)
	_, _, err = bad.Get("bad", ms(0))
	require.ErrorIs(t, err, errCodec)
	_, err = bad.Fetch("bad", ms(0), ms(1))
	require.ErrorIs(t, err, errCodec)
	require.NoError(t, w.Store().Put([]byte("x"), ms(50), []byte("bad")))
	_, _, err = bad.Get("x", ms(50))
	require.EqualError(t, err, "statestore: w: deserialize value: codec says no")
	it, err := bad.FetchAll(ms(50), ms(50))
	require.NoError(t, err)
	require.False(t, it.Next())
	require.ErrorIs(t, it.Err(), errCodec)
	require.True(t, it.Window().IsZero())
	require.NoError(t, it.Close())
}

type sessPair struct {
	k          string
	start, end int64
	v          int64
}

func TestSessions(t *testing.T) {
	ss := NewSessions[string, int64](NewInMemorySession("s"), stringCodec{}, int64Codec{})
	require.Equal(t, "s", ss.Store().Name())
	require.NoError(t, ss.Put("a", ms(0), ms(10), 1))
	require.NoError(t, ss.Put("a", ms(20), ms(30), 2))
	require.NoError(t, ss.Put("b", ms(0), ms(10), 3))

	find := func(k string, earliestEnd, latestStart int64) []sessPair {
		it, err := ss.FindSessions(k, ms(earliestEnd), ms(latestStart))
		require.NoError(t, err)
		var out []sessPair
		for it.Next() {
			out = append(out, sessPair{it.Key(), it.Start().UnixMilli(), it.End().UnixMilli(), it.Value()})
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		return out
	}
	require.Equal(t, []sessPair{{"a", 0, 10, 1}, {"a", 20, 30, 2}}, find("a", 0, 100))
	require.Equal(t, []sessPair{{"a", 20, 30, 2}}, find("a", 15, 100))

	require.NoError(t, ss.Remove("a", ms(0), ms(10)))
	require.Equal(t, []sessPair{{"a", 20, 30, 2}}, find("a", 0, 100))
	require.NoError(t, ss.ExpireBefore(ms(31)))
	require.Empty(t, find("a", 0, 100))
	require.Empty(t, find("b", 0, 100))
	require.ErrorIs(t, ss.Put("a", ms(10), ms(0), 1), ErrInvalidSession)

	var topics []string
	bad := NewSessions[string, string](ss.Store(), failCodec{&topics}, failCodec{&topics})
	require.ErrorIs(t, bad.Put("bad", ms(0), ms(1), "v"), errCodec)
	require.ErrorIs(t, bad.Put("k", ms(0), ms(1), "bad"), errCodec)
	require.ErrorIs(t, bad.Remove("bad", ms(0), ms(1)), errCodec)
	_, err := bad.FindSessions("bad", ms(0), ms(1))
	require.ErrorIs(t, err, errCodec)
	require.NoError(t, ss.Store().Put([]byte("k"), ms(0), ms(1), []byte("bad")))
	it, err := bad.FindSessions("k", ms(0), ms(1))
	require.NoError(t, err)
	require.False(t, it.Next())
	require.EqualError(t, it.Err(), "statestore: s: deserialize value: codec says no")
	require.True(t, it.Start().IsZero())
	require.True(t, it.End().IsZero())
	require.NoError(t, it.Close())

	require.NoError(t, ss.Store().Close())
	_, err = ss.FindSessions("a", ms(0), ms(1))
	require.ErrorIs(t, err, ErrClosed)
}

// The typed views accept any type with the two codec methods, as
// serde.Serde[T] has them.
var (
	_ Codec[string] = stringCodec{}
	_ Codec[int64]  = int64Codec{}
)
