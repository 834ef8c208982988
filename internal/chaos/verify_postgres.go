package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
)

// checkPostgres checks the PostgreSQL branches' tables (pgsink.go), when
// the scenario has them, reading them with pgx apart from weir's sink:
//
//   - every account with good inputs has a row, and the row is the fold
//     of all of them (a row that is the fold of fewer is pending: the
//     store may still be behind while the members run; after they stop
//     it is a mismatch); no row names another account;
//   - every good input's id is in the audit table exactly once (an id
//     missing is lost, a second row a duplicate: a failure under
//     exactly-once, counted under at-least-once), with its account and
//     sequence number, and no bad input's id is there.
//
// The end-of-run records' rows (endofrun.go) are left out, as in every
// check but the region totals.
func (v *verifier) checkPostgres(ctx context.Context, r *report) error {
	prefix := v.topics.pgPrefix()
	if prefix == "" {
		return nil
	}
	conn, err := connectPG(ctx) // waits while the database is down
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := v.checkPGAccounts(ctx, conn, prefix+"_accounts", r); err != nil {
		return err
	}
	return v.checkPGAudit(ctx, conn, prefix+"_audit", r)
}

// checkPGAccounts checks the upsert table: one row per account, its
// final fold.
func (v *verifier) checkPGAccounts(ctx context.Context, conn *pgx.Conn, table string, r *report) error {
	rows, err := conn.Query(ctx, "SELECT account, count, sum, min, max, last_k, last_id FROM "+table)
	if err != nil {
		return fmt.Errorf("chaos: read %s: %w", table, err)
	}
	got := map[string]Agg{}
	for rows.Next() {
		var key string
		var a Agg
		if err := rows.Scan(&key, &a.Count, &a.Sum, &a.Min, &a.Max, &a.LastK, &a.LastID); err != nil {
			rows.Close()
			return fmt.Errorf("chaos: read %s: %w", table, err)
		}
		got[key] = a
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("chaos: read %s: %w", table, err)
	}
	for _, key := range slices.Sorted(maps.Keys(got)) {
		if _, ok := v.exp.folds[key]; !ok && !isEndOfRun(key) {
			r.mismatches++
			r.problem("postgres %s: a row of %q, an account with no good input", table, key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(v.exp.folds)) {
		folds := v.exp.folds[key]
		a, ok := got[key]
		switch {
		case !ok:
			r.lost++
			r.problem("postgres %s: no row of account %s (%d good inputs)", table, key, len(folds))
		case a.Count < 1 || a.Count > int64(len(folds)) || !sameFold(a, folds[a.Count-1]):
			r.mismatches++
			r.problem("postgres %s: account %s's row is %+v, not the fold of its first inputs (the last of %d: %+v)",
				table, key, a, len(folds), folds[len(folds)-1])
		case a.Count < int64(len(folds)):
			r.pending++
			r.problem("postgres %s: account %s's row folds %d of its %d good inputs", table, key, a.Count, len(folds))
		}
	}
	return nil
}

// checkPGAudit checks the append table: every good input's id once, with
// its account and sequence number.
func (v *verifier) checkPGAudit(ctx context.Context, conn *pgx.Conn, table string, r *report) error {
	rows, err := conn.Query(ctx, "SELECT id, account, k FROM "+table)
	if err != nil {
		return fmt.Errorf("chaos: read %s: %w", table, err)
	}
	seen := make([]int32, len(v.exp.inputs))
	for rows.Next() {
		var id, k int64
		var key string
		if err := rows.Scan(&id, &key, &k); err != nil {
			rows.Close()
			return fmt.Errorf("chaos: read %s: %w", table, err)
		}
		in, ok := v.input(id)
		switch {
		case !ok && isEndOfRun(key):
			continue
		case !ok:
			r.mismatches++
			r.problem("postgres %s: id %d (%s) is no input's", table, id, key)
			continue
		case in.Kind != Good:
			r.mismatches++
			r.problem("postgres %s: bad input %d (kind %d) audited", table, id, in.Kind)
		case key != in.Key || k != in.K:
			r.mismatches++
			r.problem("postgres %s: input %d audited as %s k=%d, not %s k=%d", table, id, key, k, in.Key, in.K)
		}
		seen[id-1]++
		if seen[id-1] > 1 {
			// Under at-least-once the repartition topic the audit's
			// sub-topology reads may hold an input twice (its writer
			// replayed it): two inputs to the sink, each written once.
			r.duplicates++
			if v.ordered {
				r.problem("postgres %s: input %d applied %d times", table, id, seen[id-1])
			}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("chaos: read %s: %w", table, err)
	}
	for i, in := range v.exp.inputs {
		if in.Kind == Good && seen[i] == 0 {
			r.lost++
			r.problem("postgres %s: input %d (%s k=%d) not audited", table, in.ID, in.Key, in.K)
		}
	}
	return nil
}
