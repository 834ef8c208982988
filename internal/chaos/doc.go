// Package chaos is weir's reliability suite: a workload run by three
// instances in child processes while they are killed (SIGKILL) and
// restarted, leave and join the group, stall past their session timeout
// and, on kfake, meet broker faults; then an independent read_committed
// verifier (franz-go, not weir's sarama adapter) checks every output.
//
// Workload: an input topic of 8 partitions, records keyed by one of 1,000
// accounts, each a unique id, the account's sequence number and an
// amount; 1% undeserializable values, 0.1% rejected by a processor, 0.1%
// whose copy is larger than any producer delivers. Topology (see Build):
// a copy of every input, and, after a repartition by key, a per-account
// running sum, count, min and max in a Badger store, emitting the running
// aggregate. The extended workload (Config.Extended; weir-chaos runs it
// unless -extended=false, but for query scenarios) adds the same per account and 10 s tumbling window of event
// time in a Badger window store, a stream-stream join of each account's
// even-id records with its odd-id records within 2 s of event time, the
// aggregate per account and session (1 s gap) in a Badger session store,
// the same even/odd outer join with a 2 s grace (unmatched records are
// emitted as windows close during the run), and two branches of the
// aggregate table (branches.go): re-grouped by region (Count mod 4, so an
// account moves with every input), the accounts and sum per region with an
// adder and a subtractor; and joined by that region as a foreign key to a
// small regions table the runner fills before the instances start. After
// the last input an extended run writes one end-of-run record per
// partition, of a reserved account, stamped 20 s later: it closes the outer
// join's last windows (endofrun.go); the verifier skips the reserved
// accounts' outputs but counts them in the region totals.
//
// Network faults (Config.NetFaults, netfaults.go) cut one broker off from
// one instance only, or add delay and loss to one broker's port, on the
// loopback routes of per-instance proxies that rewrite the brokers'
// addresses in the answers that carry them (netproxy.go); disk faults
// (Config.DiskFaults, diskfaults.go) damage a stopped instance's state
// dir — random bytes in its tables and value logs, the files cut to half,
// the MANIFEST overwritten — before its restart, or fill its volume. The
// verifier is the same: the output stays exact, and no instance may exit
// by itself.
//
// A micro-batch scenario ends with a bounded phase: the last tenth of the
// input arrives with every instance stopped, and three AvailableNow
// instances, one killed and restarted on the way, must process it and exit
// by themselves (bounded.go).
//
// The verifier checks: every good input copied once (no duplicate id, no
// loss); each account's k-th aggregate equals the fold of its first k
// good inputs (under exactly-once by position) — extended, also each
// account's and window's k-th windowed aggregate the fold of its first k
// good inputs in that window, every pair of an account's even-id and
// odd-id good inputs within 2 s joined once and nothing else joined,
// every session written once with the fold of its inputs, deleted once if
// a later input extends it, the last ones kept; under exactly-once each
// region's last total is what every account's final fold makes (under
// at-least-once a change read again is subtracted and added again, as in
// Kafka Streams, so the totals are not checked); every foreign-key join
// result names the region the account had at that count, and each
// account's last one is its final fold's (under at-least-once that one is
// written: a replaced member's late duplicate may follow it); every
// outer-join pair a real one,
// every good input in a pair or emitted alone (with the end-of-run
// records, none can still wait at the end), and under exactly-once no output twice; every bad input once in
// "<input>-dlq" with the weir.error.* and weir.source.* headers naming its
// error and offset; no transaction left open (last stable offset = end
// offset) on any topic weir wrote; the group's committed offsets equal the
// input's end offsets; and for every store partition, the Badger store
// with the newest checkpoint plus the committed changelog after that
// checkpoint, replayed by weir's writer-generation rule — what a restore
// from it holds — equals the recomputation. At-least-once scenarios report
// duplicates without failing on them; exactly-once scenarios fail on any.
//
// With WEIR_CHAOS_POSTGRES=1 and WEIR_POSTGRES_DSN set, the workload
// also writes each account's
// running aggregate (upsert) and every input it aggregates (append)
// through weir's PostgreSQL sink, and the verifier checks the tables:
// every account's row its final fold, every good input's id once
// (pgsink.go, verify_postgres.go). Config.DBRestarts then also takes the
// database down and back up mid-run (dbrestart.go).
//
// # Usage
//
// The command cmd/weir-chaos drives it (see docs/reliability.md):
//
//	go run ./cmd/weir-chaos                       # short suite on an in-process kfake
//	go run ./cmd/weir-chaos -brokers 127.0.0.1:9092
//
// A program that runs scenarios must call RunChild when IsChild, first
// thing in main, since children are the program itself re-executed:
//
//	if chaos.IsChild() { if err := chaos.RunChild(); err != nil { os.Exit(1) }; return }
//	res := chaos.Run(ctx, chaos.Config{Brokers: ..., Exe: []string{os.Args[0]}, ...})
//	fmt.Println(res) // scenario=... result=PASS
package chaos
