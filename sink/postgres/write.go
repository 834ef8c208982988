package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/weirstream/weir/sink"
)

// Write stores b in one transaction with the task's progress row
// (sink.Sink; the package doc says how).
func (s *Sink) Write(ctx context.Context, b *sink.Batch) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.setup(ctx); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error { return s.write(ctx, tx, b) })
	switch {
	case errors.Is(err, errDone):
		return nil
	case errors.Is(err, sink.ErrFenced), errors.Is(err, sink.ErrPermanent):
		return err
	case err != nil:
		return classify(fmt.Errorf("postgres: write task %s: %w", b.Task, err))
	}
	return nil
}

// errDone rolls back a write the store already holds.
var errDone = errors.New("postgres: already written")

// write is Write's transaction.
func (s *Sink) write(ctx context.Context, tx pgx.Tx, b *sink.Batch) error {
	id, task := s.id(b.Sink), b.Task.String()
	var gen int32
	var claims int64
	var stored string
	err := tx.QueryRow(ctx, `SELECT generation, claims, position FROM `+s.progress+` WHERE sink = $1 AND task = $2 FOR UPDATE`,
		id, task).Scan(&gen, &claims, &stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: task %s was never claimed", sink.ErrFenced, task)
	case err != nil:
		return err
	}
	if gen > b.Generation || claims != b.Token {
		return fmt.Errorf("%w: task %s: the writer holds generation %d and claim %d, the store %d and %d",
			sink.ErrFenced, task, b.Generation, b.Token, gen, claims)
	}
	have, err := sink.ParsePosition(stored)
	if err != nil {
		return fmt.Errorf("%w: postgres: progress of task %s: %w", sink.ErrPermanent, task, err)
	}
	if len(b.To) > 0 && have.Includes(b.To) {
		return errDone
	}
	recs := make([]sink.Record, 0, len(b.Records))
	for _, r := range b.Records {
		if !have.Covers(r.Source, r.Offset) {
			recs = append(recs, r)
		}
	}
	refused := append([]sink.Refusal(nil), b.Refused...)
	bad := func(r sink.Record, cause error) error {
		if err := callBad(b.Bad, r, cause); err != nil {
			return err
		}
		refused = append(refused, sink.Refusal{ID: r.ID(), Error: cause.Error()})
		return nil
	}
	if err := s.writeRecords(ctx, tx, recs, bad); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE `+s.progress+` SET position = $3, refused = $4, updated_at = now() WHERE sink = $1 AND task = $2`,
		id, task, have.Merge(b.To).String(), refusedText(refused))
	return err
}

// refusedText encodes the refusals of a write for the progress row.
func refusedText(rs []sink.Refusal) string {
	if len(rs) == 0 {
		return ""
	}
	b, _ := json.Marshal(rs) // plain structs: no error
	return string(b)
}

// writeRecords writes recs by the sink's mode.
func (s *Sink) writeRecords(ctx context.Context, tx pgx.Tx, recs []sink.Record, bad func(sink.Record, error) error) error {
	if len(recs) == 0 {
		return nil
	}
	if s.cfg.Mode == Func {
		return guarded(ctx, tx, recs, bad, func(idx []int) error {
			sub := make([]sink.Record, len(idx))
			for j, i := range idx {
				sub[j] = recs[i]
			}
			return s.cfg.Func(ctx, tx, sub)
		})
	}
	var rows, deletes []row
	last := map[string]int{} // Upsert: key → index in ops
	var ops []row
	for _, r := range recs {
		vals, err := s.row(r)
		if err != nil {
			if err := bad(r, fmt.Errorf("postgres: row: %w", err)); err != nil {
				return err
			}
			continue
		}
		if s.cfg.Mode == Append {
			rows = append(rows, row{r, vals})
			continue
		}
		k := s.keyOf(vals)
		if i, ok := last[k]; ok {
			ops[i] = row{r, vals} // the last record of a key wins
		} else {
			last[k] = len(ops)
			ops = append(ops, row{r, vals})
		}
	}
	for _, o := range ops {
		if o.rec.Value == nil {
			deletes = append(deletes, o)
		} else {
			rows = append(rows, o)
		}
	}
	for start := 0; start < len(rows); start += s.cfg.RowsPerStatement {
		chunk := rows[start:min(start+s.cfg.RowsPerStatement, len(rows))]
		err := guarded(ctx, tx, recsOf(chunk), bad, func(idx []int) error {
			vals := make([][]any, len(idx))
			for j, i := range idx {
				vals[j] = chunk[i].vals
			}
			return s.insert(ctx, tx, vals)
		})
		if err != nil {
			return err
		}
	}
	if len(deletes) > 0 {
		err := guarded(ctx, tx, recsOf(deletes), bad, func(idx []int) error {
			for _, i := range idx {
				if err := s.delete(ctx, tx, deletes[i].vals); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// row is a record and its column values.
type row struct {
	rec  sink.Record
	vals []any
}

func recsOf(rows []row) []sink.Record {
	out := make([]sink.Record, len(rows))
	for i, r := range rows {
		out[i] = r.rec
	}
	return out
}

// row returns the column values of r.
func (s *Sink) row(r sink.Record) ([]any, error) {
	if s.cfg.Row != nil {
		vals, err := s.cfg.Row(r)
		if err == nil && len(vals) != len(s.cfg.Columns) {
			err = fmt.Errorf("postgres: Row returned %d values for %d columns", len(vals), len(s.cfg.Columns))
		}
		return vals, err
	}
	var v any
	if r.Value != nil {
		v = string(r.Value)
	}
	return []any{string(r.Key), v}, nil
}

// keyOf identifies the key of a row by its Key columns' values.
func (s *Sink) keyOf(vals []any) string {
	var sb strings.Builder
	for _, i := range s.keyIdx {
		fmt.Fprintf(&sb, "%T\x00%v\x00", vals[i], vals[i])
	}
	return sb.String()
}

// insert runs one multi-row INSERT (with Upsert's ON CONFLICT).
func (s *Sink) insert(ctx context.Context, tx pgx.Tx, rows [][]any) error {
	var sb strings.Builder
	sb.WriteString(s.prefix)
	args := make([]any, 0, len(rows)*len(s.cfg.Columns))
	for i, vals := range rows {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for j, v := range vals {
			if j > 0 {
				sb.WriteString(", ")
			}
			args = append(args, v)
			sb.WriteByte('$')
			sb.WriteString(strconv.Itoa(len(args)))
		}
		sb.WriteByte(')')
	}
	sb.WriteString(s.conflict)
	_, err := tx.Exec(ctx, sb.String(), args...)
	return err
}

// delete removes the row of a tombstone's key (Upsert).
func (s *Sink) delete(ctx context.Context, tx pgx.Tx, vals []any) error {
	var conds []string
	var args []any
	for _, i := range s.keyIdx {
		args = append(args, vals[i])
		conds = append(conds, pgx.Identifier{s.cfg.Columns[i]}.Sanitize()+" = $"+strconv.Itoa(len(args)))
	}
	_, err := tx.Exec(ctx, "DELETE FROM "+s.table+" WHERE "+strings.Join(conds, " AND "), args...)
	return err
}

// guarded runs do on every record of recs under a savepoint. If it fails
// for a bad row (badRow), it is rolled back and run again on one record
// at a time, each under its own savepoint: a record that still fails goes
// to bad with the error, and the others stay written.
func guarded(ctx context.Context, tx pgx.Tx, recs []sink.Record, bad func(sink.Record, error) error, do func(idx []int) error) error {
	all := make([]int, len(recs))
	for i := range all {
		all[i] = i
	}
	err := savepoint(ctx, tx, func(tx pgx.Tx) error { return do(all) })
	if err == nil || !badRow(err) {
		return err
	}
	for i := range recs {
		err := savepoint(ctx, tx, func(tx pgx.Tx) error { return do([]int{i}) })
		switch {
		case err == nil:
		case badRow(err):
			if err := callBad(bad, recs[i], err); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return nil
}

// savepoint runs fn in a nested transaction (a SAVEPOINT): rolled back to
// it when fn fails, released when it succeeds.
func savepoint(ctx context.Context, tx pgx.Tx, fn func(pgx.Tx) error) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(sp); err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return sp.Commit(ctx)
}

// callBad hands a refused record to the bad-record policy; without one
// the write fails.
func callBad(bad func(sink.Record, error) error, r sink.Record, cause error) error {
	if bad == nil {
		return fmt.Errorf("postgres: a record the table refuses: %w", cause)
	}
	return bad(r, cause)
}

// badRow reports an error caused by a row's values: a data exception
// (SQLSTATE class 22) or an integrity constraint violation (23).
func badRow(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23")
}

// classify wraps sink.ErrPermanent around errors no retry heals.
func classify(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "42", "28", "3D":
			return fmt.Errorf("%w: %w", sink.ErrPermanent, err)
		}
	}
	return err
}
