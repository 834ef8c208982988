// Package runtime is what weir's engines (continuous, microbatch) share:
// the topic plan (partition counts, co-partitioning, internal topics), the
// tasks that run a topology per partition on the members of a consumer
// group, state restore from changelogs, the sink that writes task outputs to
// Kafka, and the bad-record policy.
//
// An engine builds a Runtime with New, calls Prepare once (it runs the
// preflight — see preflight.go: every source and sink topic exists, the
// sources of each sub-topology are co-partitioned, existing internal
// topics fit, exactly-once's transactional features are there — and
// creates the internal topics), then joins the group and,
// for each claimed partition, Acquires its task, feeds it records and
// Releases it when the claim ends.
package runtime
