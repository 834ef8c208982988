package topology

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
)

// queryable records the codecs interactive queries read store with: ks
// encodes the keys the store is written under (for window and session
// stores, the key inside the window), vs its values.
func queryable[K, V any](b *Builder, store string, ks serde.Serde[K], vs serde.Serde[V]) {
	sd, ok := b.stores[store]
	if !ok || ks == nil || vs == nil {
		return
	}
	sd.codec = storeCodec(store, ks, vs)
}

// storeCodec returns the codecs of store, whose keys ks encodes and values
// vs.
func storeCodec[K, V any](store string, ks serde.Serde[K], vs serde.Serde[V]) *processor.StoreCodec {
	return &processor.StoreCodec{
		ParseKey: func(text string) ([]byte, error) {
			k, err := parseKey[K](text)
			if err != nil {
				return nil, err
			}
			kb, err := ks.Serialize(store, k)
			if err != nil {
				return nil, fmt.Errorf("topology: store %q: key %q: %w", store, text, err)
			}
			return kb, nil
		},
		DecodeKey: func(b []byte) (any, error) {
			k, err := ks.Deserialize(store, b)
			return k, err
		},
		DecodeValue: func(b []byte) (any, error) {
			v, err := vs.Deserialize(store, b)
			return v, err
		},
	}
}

// parseKey reads a key of type K from text: strings as they are, []byte as
// the text's bytes, integers and floats as numbers, anything else as JSON.
func parseKey[K any](text string) (K, error) {
	var k K
	var err error
	switch p := any(&k).(type) {
	case *string:
		*p = text
	case *[]byte:
		*p = []byte(text)
	case *int64:
		*p, err = strconv.ParseInt(text, 10, 64)
	case *int:
		*p, err = strconv.Atoi(text)
	case *int32:
		var n int64
		n, err = strconv.ParseInt(text, 10, 32)
		*p = int32(n)
	case *uint64:
		*p, err = strconv.ParseUint(text, 10, 64)
	case *float64:
		*p, err = strconv.ParseFloat(text, 64)
	case *bool:
		*p, err = strconv.ParseBool(text)
	default:
		err = json.Unmarshal([]byte(text), p)
	}
	if err != nil {
		return k, fmt.Errorf("%w: %q is no %s: %w", ErrBadKey, text, typeName[K](), err)
	}
	return k, nil
}
