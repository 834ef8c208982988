package kafkatest

import (
	"maps"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// EnvRotation names the variable that takes the long tests of [Rotation]
// in turns: set to a seed (CI sets its run's seed, CI_SEED), only the
// tests of turn seed % [Turns] run, and each test of the rotation runs in
// one run out of Turns, drawn by the seed. Unset or "", every long test
// runs (WEIR_LONG_TESTS=1 alone, as on a developer's machine). The long
// tests outside the table run in every run.
const EnvRotation = "WEIR_LONG_ROTATION"

// Turns is the number of turns of the rotation.
const Turns = 3

// rotation gives the long tests that CI runs in turns their turn, by
// name (t.Name() where the test calls [Long]: a subtest's full name for a
// Long inside a subtest). What CI runs in every run and what in turns is
// the table of docs/reliability.md ("What CI runs"), which tests/docs
// checks against this map; a name here that no test has any more is
// caught there too.
//
// Every turn covers every class of fault through at least one test of
// its own or one that runs always (the chaos suite's lines of .ci/run,
// which run every time, cover every class too): SIGKILLs, broker faults
// and failed transactions, a stalled member, network faults, a damaged
// or full state volume, the database down, rebalances and hand-overs,
// interactive queries. The secured broker's tests run in every run, in
// their own section of .ci/run.
var rotation = map[string]int{
	// Turn 0: SIGKILLs and restarts on the same, an empty and another
	// state dir; the database server stopped for 30 s; queries under
	// churn; an undelivered output rewound; every transaction fault of
	// the session on both clients; a graceful hand-over; a killed
	// member's open transaction fenced by a survivor at takeover.
	"TestStateSurvivesSIGKILL":                     0,
	"TestPostgresSinkWaitsOutTheServerDown":        0,
	"TestQueryAvailabilityUnderChurn":              0,
	"TestUndeliveredOutputRewinds":                 0,
	"TestInjectedFaults":                           0,
	"TestThreeInstancesShareAndHandOverPartitions": 0,
	"TestKilledInstanceIsFencedAtTakeover":         0,

	// Turn 1: SIGKILLs of instances writing to PostgreSQL; the database
	// down for 12 s; the query smoke scenario (kills); a graceful stop
	// while outputs retry; a scale-out's warm-ups; the engines against
	// topologytest; a stalled exactly-once member fenced (in .ci/run's
	// section without -race), and fenced by a survivor.
	"TestPostgresSinkSurvivesSIGKILL":          1,
	"TestPostgresSinkWaitsOutAnOutage":         1,
	"TestQuerySmoke":                           1,
	"TestStopWhileOutputsRetryIsGraceful":      1,
	"TestScaleOutWarmsUpBeforeTasksMove":       1,
	"TestEnginesMatchTopologytest":             1,
	"TestStalledMemberIsFenced":                1,
	"TestStalledMemberFencedBySurvivorRewinds": 1,

	// Turn 2: a killed owner's tasks taken over by their standbys; one
	// task's database writes hung; queries while every commit fails;
	// failed transactions of two instances (without -race); standbys
	// shortening a restore; damaged state dirs (the seed's draw of the
	// matrix); the status page in a browser, its child killed; the
	// engines' conformance, foreign-key joins and every script step by
	// step (in .ci/run's conformance section, without -race); a live
	// member fenced while it keeps its tasks. .ci/run runs the
	// reliability suite's sarama line in this turn too.
	"TestOneStandbyPerTaskTakesOverAKilledOwner": 2,
	"TestPostgresSinkOtherPartitionsGoOn":        2,
	"TestQueriesNeverShowAbortedValues":          2,
	"TestExactlyOnceSurvivesFailedTransactions":  2,
	"TestStandbyReplicasShortenTheRestore":       2,
	"TestDamagedStateIsRebuilt/matrix":           2,
	"TestStatusPageInABrowser":                   2,
	"TestForeignKeyJoinOnEngines":                2,
	"TestContinuousEngineStepByStep":             2,
	"TestLiveMemberFencedWhileKeepingItsTasks":   2,
}

// Rotation returns the long tests that run in turns, each with its turn
// (0 to Turns-1).
func Rotation() map[string]int { return maps.Clone(rotation) }

// rotationTurn returns this run's turn and true when EnvRotation is set.
func rotationTurn(t testing.TB) (int, bool) {
	t.Helper()
	v := os.Getenv(EnvRotation)
	if v == "" {
		return 0, false
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	require.NoError(t, err, "%s", EnvRotation)
	return int(seed % Turns), true
}

// skipOutOfTurn skips t when it is a test of table whose turn this run
// is not.
func skipOutOfTurn(t testing.TB, table map[string]int) {
	t.Helper()
	turn, ok := table[t.Name()]
	if !ok {
		return
	}
	now, set := rotationTurn(t)
	if set && now != turn {
		t.Skipf("a long test of turn %d of the rotation; this run's %s=%s is turn %d (docs/reliability.md)",
			turn, EnvRotation, os.Getenv(EnvRotation), now)
	}
}
