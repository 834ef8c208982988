// Package postgres is weir's PostgreSQL sink (on pgx v5): a topology's
// ToSink output kept in a table, exactly once (package sink states the
// protocol).
//
//	pool, err := pgxpool.New(ctx, "postgres://app@db/app")
//	counts, err := postgres.New(postgres.Config{
//		Pool: pool, Mode: postgres.Upsert, Table: "word_counts",
//		Columns: []string{"word", "n"}, Key: []string{"word"},
//		Row: func(r sink.Record) ([]any, error) {
//			return []any{string(r.Key), int64(binary.BigEndian.Uint64(r.Value))}, nil
//		},
//	})
//	app, err := weir.New(topo, weir.WithSink("counts", counts), ...)
//
// # Modes
//
//   - Upsert: one row per key. Within a write the last record of each key
//     wins; a tombstone (nil value) deletes the key's row. Rows go in
//     multi-row INSERT … ON CONFLICT (Key) DO UPDATE statements.
//   - Append: every record is a new row (an audit table), in multi-row
//     INSERT statements.
//   - Func: the user's function gets the transaction (pgx.Tx) and the
//     records, for anything else.
//
// # Progress
//
// Every write runs in one transaction that also updates the task's row
// in the progress table (Config.ProgressTable, created if missing):
// (sink, task) → (generation, position, refused: the records left out as
// bad since weir's last Kafka commit, as JSON). The row is locked first, so
// the writes of one task are serialised; a generation older than the
// row's is refused (sink.ErrFenced), records the row's position covers
// are left out, and a write whose position the row already includes
// changes nothing. The tables and the progress row commit together.
//
// # Bad rows
//
// A statement that fails with a data exception (SQLSTATE class 22: a
// value the column refuses) or an integrity constraint violation (class
// 23) is rolled back to a savepoint and its rows written one at a time,
// each under a savepoint of its own; each row that still fails goes to
// sink.Batch.Bad with PostgreSQL's error, and the others are written. So
// one bad row never blocks its task.
//
// # Errors
//
// Errors of class 42 (an undefined table or column, a syntax error, a
// permission), 28 (authentication) and 3D (no such database) wrap
// sink.ErrPermanent; anything else (the server down, a connection lost, a
// serialization failure) is returned as is, and weir tries the write again
// with back-off. A call that hangs (a row lock another session holds, a
// network that drops packets) is cut at Config.Timeout (DefaultTimeout,
// 30 s) and fails the same way: one task's stuck write never holds the
// instance's commits for good, and the other tasks' writes go on between
// its attempts.
package postgres
