// Package lint holds the repository's policy tests, as pebble's
// internal/lint: which package may depend on what, and which may read the
// wall clock. It has no code of its own.
package lint
