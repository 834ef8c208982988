// Package docs checks that the documentation tells the truth: every command
// README.md and docs/*.md show is exercised by a test or by CI (.ci/run),
// every Go block is code that compiles, every relative link resolves.
//
// It has no production code. Its tests read the repository's files only
// (from the repository's root): they are fast and need no broker.
package docs
