package weir

// WithMinFreeDisk sets the free space, in bytes, the state dir's volume
// must keep: below it the instance stops taking work — continuous mode
// holds its claims and ends no epoch, micro-batch mode plans no batch —
// reports itself Retrying (/readyz 503, its error wrapping "disk full"),
// and resumes by itself once the free space is back above it. It is
// checked before each epoch end and each batch, which are what write to
// Badger. Default (and for 0): 256 MiB, twice what Badger may write or
// map at once for the stores (a memtable flushed to a table, the next
// memtable's file, a value-log file; see docs/design.md): Badger writes
// tables through memory maps, and a map past the end of a full volume
// ends the process (SIGBUS) instead of failing a write. A negative value
// turns the check off. Kafka Streams has no counterpart: RocksDB fails
// its writes with an error instead.
func WithMinFreeDisk(bytes int64) Option { return func(c *config) { c.minFreeDisk = bytes } }
