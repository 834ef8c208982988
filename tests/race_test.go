//go:build race

package tests

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = true
