// Package tests holds weir's integration suites: whole applications run
// through the public API (package weir) against the in-process kfake broker,
// and again against a real cluster when KAFKA_BROKERS names one — crashes and
// restarts, exactly-once delivery, standbys, staging, queries under churn,
// secured brokers, sink errors, stops.
//
// It has no production code: its tests are its content. They use weir as a
// user's program does, plus weir's internal test helpers (kafkatest) for
// brokers, topics and read_committed reads.
package tests
