// Package registry is a client for a Schema Registry with Confluent's REST
// API (Confluent Schema Registry; Karapace, Redpanda and Apicurio Registry's
// /apis/ccompat/v7 serve it too): a [serde.SchemaResolver] that
// serde.NewConfluentAvro uses to register and look up the schemas of the
// records it writes and reads.
//
// # Usage
//
//	reg, err := registry.New("https://registry.example.com:8081",
//		registry.WithBasicAuth(user, password),
//		registry.WithTLS(tlsConfig), // optional: client certificates, a private CA
//	)
//	if err != nil { ... }
//	clicks, err := serde.NewConfluentAvro(reg, clickSchema)
//
// serde.NewConfluentAvro calls [Client.IDForSchema] the first time it writes
// to a subject and [Client.SchemaByID] the first time it reads an id; the
// subject comes from the serde's subject name strategy (serde.TopicNameStrategy
// by default, serde.WithRecordNameStrategy, serde.WithTopicRecordNameStrategy).
//
// # Writing: register, look up, or pin a version
//
// By default IDForSchema registers the schema under the subject (POST
// /subjects/{subject}/versions), like Confluent's serializers with
// auto.register.schemas=true: the registry returns the id of the schema if
// the subject has it already, or checks it against the subject's
// compatibility level and adds it as a new version. [WithAutoRegister](false)
// only looks the schema up (POST /subjects/{subject}), so that a writer can
// only use schemas registered beforehand, by a deployment step or a person.
// [WithSubjectVersion] pins the writer to one version of the subject, or to
// the latest ([LatestVersion]): the schema must be that version.
//
// # Caching
//
// Ids never change their schema, so the client caches every schema it has
// fetched or registered by id, and the id of every (subject, schema) pair it
// has registered or looked up, for the client's lifetime. Failures are not
// cached. A warm client sends no request; the serdes keep a cache of their
// own besides.
//
// # Errors and retries
//
// A request that fails with a 5xx status or with no response at all (a
// refused connection, a reset, a timeout) is sent again, up to [WithRetries]
// times, after a backoff that doubles from [WithBackoff]'s minimum to its
// maximum; other statuses are final at once. (Registering is idempotent, so a
// registration is retried like a read.) Each call of the
// [serde.SchemaResolver] methods is bounded by [WithTimeout] (serdes pass no
// context); the Context variants take the caller's context instead.
//
// Errors are [*Error] values that name the operation, the subject or the
// schema id and the HTTP status. errors.Is(err, serde.ErrSchemaNotFound)
// holds for a 404 (an unknown id, subject or version, or a schema the subject
// does not have), errors.Is(err, ErrIncompatible) for a 409 (the registry
// refused the schema under the subject's compatibility level).
//
// The client is built on franz-go's schema registry client
// (github.com/twmb/franz-go/pkg/sr), which speaks the HTTP API;
// [Client.SR] returns it for the operations this package does not wrap
// (compatibility levels, modes, deletion).
package registry
