//go:build !race

package exactlyonce_test

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = false
