package serde

import "errors"

// ErrDeserialize is wrapped by every error a Deserializer returns for bytes it
// cannot decode.
var ErrDeserialize = errors.New("serde: cannot deserialize")

// ErrSerialize is wrapped by every error a Serializer returns for a value it
// cannot encode.
var ErrSerialize = errors.New("serde: cannot serialize")

// ErrInvalidSchema is wrapped by the error of every constructor given an Avro
// schema it cannot use, and by the error of a Confluent deserializer that
// resolved a schema id to such a schema.
var ErrInvalidSchema = errors.New("serde: invalid avro schema")

// ErrSchemaNotFound is wrapped by the error a SchemaResolver returns for a
// schema id it does not know.
var ErrSchemaNotFound = errors.New("serde: schema not found")
