package badgerstore

import (
	"time"

	"github.com/weirstream/weir/statestore"
)

// OpenVersioned opens the versioned store name in partition: a
// statestore.NewVersioned over the key-value store partition of that name,
// whose layout sorts each key's versions by timestamp in Badger's key
// order. Engines open the key-value store through Factory and wrap it, so
// its writes are staged and changelogged as any key-value store's.
func (db *DB) OpenVersioned(name string, partition int32, historyRetention time.Duration) (statestore.VersionedStore, error) {
	s, err := db.Factory().Open(statestore.Spec{Name: name, Kind: statestore.KindKeyValue}, partition)
	if err != nil {
		return nil, err
	}
	return statestore.NewVersioned(s.(statestore.KeyValueStore), historyRetention), nil
}
