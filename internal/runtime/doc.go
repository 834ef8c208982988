// Package runtime is what weir's engines (continuous, microbatch) share:
// the topic plan (partition counts, co-partitioning, internal topics), the
// tasks that run a topology per partition on the members of a consumer
// group, state restore from changelogs, the sink that writes task outputs to
// Kafka, and the bad-record policy.
//
// An engine builds a Runtime with New, calls Prepare once (it checks the
// source topics and creates the internal ones), then joins the group and,
// for each claimed partition, Acquires its task, feeds it records and
// Releases it when the claim ends.
package runtime
