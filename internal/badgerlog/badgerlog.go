// Package badgerlog passes Badger's log lines to log/slog, for the two
// Badger databases of an instance (the offsets log and the state stores).
//
//	opts := badger.DefaultOptions(dir).WithLogger(badgerlog.New(logger))
package badgerlog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// Logger is a badger.Logger writing to slog: errors and warnings at their
// level, informational and debug lines at debug level, each prefixed
// "badger: ". It is safe for concurrent use.
type Logger struct{ l *slog.Logger }

var _ badger.Logger = Logger{}

// New returns a Logger writing to l (slog.Default() if nil).
func New(l *slog.Logger) Logger {
	if l == nil {
		l = slog.Default()
	}
	return Logger{l: l}
}

// Errorf logs at error level.
func (a Logger) Errorf(f string, args ...any) { a.log(slog.LevelError, f, args) }

// Warningf logs at warning level.
func (a Logger) Warningf(f string, args ...any) { a.log(slog.LevelWarn, f, args) }

// Infof logs at debug level: Badger is chatty at info.
func (a Logger) Infof(f string, args ...any) { a.log(slog.LevelDebug, f, args) }

// Debugf logs at debug level.
func (a Logger) Debugf(f string, args ...any) { a.log(slog.LevelDebug, f, args) }

func (a Logger) log(level slog.Level, f string, args []any) {
	ctx := context.Background()
	if !a.l.Enabled(ctx, level) {
		return
	}
	a.l.Log(ctx, level, "badger: "+strings.TrimSpace(fmt.Sprintf(f, args...)))
}
