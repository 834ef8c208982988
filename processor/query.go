package processor

import "time"

// StoreCodec describes how interactive queries read a store: how a key given
// as text (in a URL) becomes the store's key bytes, and how stored keys and
// values decode into values that marshal as JSON. Package topology records
// one for every store whose serdes it knows (aggregations and materialized
// tables); stores added with AddStore have none and cannot be queried.
//
// For window and session stores the key is the record key inside the
// window: the store keeps windows under it, with their start (and end)
// times beside it.
type StoreCodec struct {
	// ParseKey turns a key given as text into the store's key bytes:
	// strings as they are, integers in decimal, other types as JSON.
	ParseKey func(text string) ([]byte, error)
	// DecodeKey decodes a stored key.
	DecodeKey func(b []byte) (any, error)
	// DecodeValue decodes a stored value.
	DecodeValue func(b []byte) (any, error)
	// Versioned says the store is a key-value store holding a versioned
	// store (statestore.NewVersioned) with HistoryRetention: key lookups
	// read its latest version, or the version as of a time; range queries
	// are refused, as Kafka Streams serves versioned stores by key only.
	Versioned        bool
	HistoryRetention time.Duration
}
