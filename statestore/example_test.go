package statestore_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/statestore"
)

// The examples use two small codecs; an application would use
// serde.String() and serde.Int64(), which satisfy statestore.Codec.
type stringCodec struct{}

func (stringCodec) Serialize(_ string, v string) ([]byte, error)   { return []byte(v), nil }
func (stringCodec) Deserialize(_ string, b []byte) (string, error) { return string(b), nil }

type int64Codec struct{}

func (int64Codec) Serialize(_ string, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(v)), nil
}

func (int64Codec) Deserialize(_ string, b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, errors.New("int64: want 8 bytes")
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// A word count over a typed view of an in-memory key-value store.
func ExampleKV() {
	counts := statestore.NewKV[string, int64](statestore.NewInMemoryKeyValue("counts"), stringCodec{}, int64Codec{})
	for _, word := range []string{"to", "be", "or", "not", "to", "be"} {
		n, _, err := counts.Get(word)
		if err != nil {
			panic(err)
		}
		if err := counts.Put(word, n+1); err != nil {
			panic(err)
		}
	}

	it, err := counts.All()
	if err != nil {
		panic(err)
	}
	defer it.Close()
	for it.Next() {
		fmt.Println(it.Key(), it.Value())
	}
	if err := it.Err(); err != nil {
		panic(err)
	}
	// Output:
	// be 2
	// not 1
	// or 1
	// to 2
}

// Tumbling one-minute windows of clicks per user, then expiry of the windows
// that fell out of retention.
func ExampleNewInMemoryWindow() {
	store := statestore.NewInMemoryWindow("clicks-per-minute")
	defer store.Close()

	base := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	clicks := []struct {
		user string
		at   time.Duration
	}{{"ann", 10 * time.Second}, {"bob", 30 * time.Second}, {"ann", 50 * time.Second}, {"ann", 70 * time.Second}}
	for _, c := range clicks {
		ts := base.Add(c.at)
		start := ts.Truncate(time.Minute) // the tumbling window of ts
		var n byte
		if v, ok, err := store.Get([]byte(c.user), start); err != nil {
			panic(err)
		} else if ok {
			n = v[0]
		}
		if err := store.Put([]byte(c.user), start, []byte{n + 1}); err != nil {
			panic(err)
		}
	}

	show := func() {
		it, err := store.FetchAll(base, base.Add(time.Hour))
		if err != nil {
			panic(err)
		}
		defer it.Close()
		for it.Next() {
			fmt.Printf("%s %s %d\n", it.Key(), it.Window().UTC().Format("15:04"), it.Value()[0])
		}
	}
	show()

	fmt.Println("expire before 12:01")
	if err := store.ExpireBefore(base.Add(time.Minute)); err != nil {
		panic(err)
	}
	show()
	// Output:
	// ann 12:00 2
	// ann 12:01 1
	// bob 12:00 1
	// expire before 12:01
	// ann 12:01 1
}
