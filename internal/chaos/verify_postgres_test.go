package chaos

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// The verifier's PostgreSQL check finds each kind of damage to the
// tables: tables written right pass; an audit row removed is a lost
// input, one written twice a duplicate, an account's row behind its
// inputs pending, a row that is no fold of its inputs a mismatch, a
// missing row lost.
func TestCheckPostgresFindsDamage(t *testing.T) {
	dsn := os.Getenv(postgresEnv)
	if dsn == "" {
		t.Skip("WEIR_POSTGRES_DSN is not set (scripts/postgres/start.sh starts a server)")
	}
	t.Setenv(PostgresEnv, "1")
	ctx := context.Background()
	topics := Topics{In: fmt.Sprintf("verify-pg-%d-in", time.Now().UnixNano())}
	prefix := topics.pgPrefix()
	_, closePG, err := postgresOptions(ctx, topics) // creates the tables
	require.NoError(t, err)
	closePG()
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE "+prefix+"_accounts, "+prefix+"_audit") })
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}

	inputs := Generate(5, 300)
	exp, err := newExpectation(inputs, nil)
	require.NoError(t, err)
	for _, in := range inputs {
		if in.Kind == Good {
			exec("INSERT INTO "+prefix+"_audit (id, account, k) VALUES ($1, $2, $3)", in.ID, in.Key, in.K)
		}
	}
	for key, folds := range exp.folds {
		a := folds[len(folds)-1]
		exec("INSERT INTO "+prefix+"_accounts VALUES ($1, $2, $3, $4, $5, $6, $7)", key, a.Count, a.Sum, a.Min, a.Max, a.LastK, a.LastID)
	}
	v := &verifier{topics: topics, exp: exp, ordered: true}
	check := func() report {
		t.Helper()
		var r report
		require.NoError(t, v.checkPostgres(ctx, &r))
		return r
	}
	require.Equal(t, report{}, check(), "tables written right")

	var good []Input
	var several string
	for _, in := range inputs {
		if in.Kind == Good {
			good = append(good, in)
		}
		if several == "" && len(exp.folds[in.Key]) > 1 {
			several = in.Key
		}
	}
	exec("DELETE FROM "+prefix+"_audit WHERE id = $1", good[0].ID)
	exec("INSERT INTO "+prefix+"_audit (id, account, k) VALUES ($1, $2, $3)", good[1].ID, good[1].Key, good[1].K)
	r := check()
	require.Equal(t, 1, r.lost, r.problems)
	require.Equal(t, 1, r.duplicates, r.problems)

	prev := exp.folds[several][len(exp.folds[several])-2]
	exec("UPDATE "+prefix+"_accounts SET count = $2, sum = $3, min = $4, max = $5, last_k = $6, last_id = $7 WHERE account = $1",
		several, prev.Count, prev.Sum, prev.Min, prev.Max, prev.LastK, prev.LastID)
	require.Equal(t, 1, check().pending, "a row behind its inputs")
	exec("UPDATE "+prefix+"_accounts SET sum = sum + 1 WHERE account = $1", several)
	require.Equal(t, 1, check().mismatches, "a row that is no fold")
	exec("DELETE FROM "+prefix+"_accounts WHERE account = $1", several)
	require.Equal(t, 2, check().lost, "a row missing, and the audit row")
}
