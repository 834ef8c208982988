package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// `weir inspect stores` and `weir inspect get`: the state stores of a state
// dir, offline (the application must not be running: Badger locks the
// directory; the database is opened read-only).

const storesSynopsis = `stores --state-dir DIR [--json]

Prints every store partition in the state dir's store database: its kind,
its number of rows (keys, windows or sessions) and its changelog checkpoint.

flags:`

const getSynopsis = `get --state-dir DIR --store NAME (--partition P | --partitions N) --key KEY [flags]

Looks a key up in a store partition of the state dir, offline. The key is
text, used as its bytes (string keys), or a decimal int64 with --int64, or
hex with --hex. With --partitions N instead of --partition, the partition is
the one weir's producers pick for the key (murmur2 over N partitions). For
window and session stores every window of the key in [--from, --to] (Unix
ms) is printed. Values print as text when they are UTF-8, as int64 when
they are 8 bytes, and in hex.

flags:`

// inspectStore is one store partition as `inspect stores --json` prints it.
type inspectStore struct {
	Store      string `json:"store"`
	Partition  int32  `json:"partition"`
	Kind       string `json:"kind"`
	Rows       int64  `json:"rows"`
	Checkpoint *int64 `json:"checkpoint,omitempty"`
	// Writer is the writer generation recorded with the checkpoint.
	Writer int32 `json:"writer,omitempty"`
}

func openStores(dir string) (*badgerstore.DB, error) {
	storeDir := filepath.Join(dir, "stores")
	if _, err := os.Stat(storeDir); err != nil {
		return nil, fmt.Errorf("no store database in %s: %w", dir, err)
	}
	return badgerstore.Open(storeDir, badgerstore.Options{ReadOnly: true, Logger: quietLogger()})
}

func runInspectStores(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect stores", storesSynopsis, stderr)
	dir := fs.String("state-dir", "", "the application's state `directory` (WithStateDir)")
	asJSON := fs.Bool("json", false, "print JSON for tools instead of text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		fmt.Fprintln(stderr, "weir inspect stores: --state-dir is required")
		fs.Usage()
		return errUsage
	}
	db, err := openStores(*dir)
	if err != nil {
		return err
	}
	defer db.Close()
	stats, err := db.Stats()
	if err != nil {
		return err
	}
	out := make([]inspectStore, 0, len(stats))
	for _, s := range stats {
		is := inspectStore{Store: s.Store, Partition: s.Partition, Kind: s.Kind.String(), Rows: s.Rows}
		if s.HasCheckpoint {
			is.Checkpoint, is.Writer = &s.Checkpoint, s.Writer
		}
		out = append(out, is)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(out) == 0 {
		fmt.Fprintln(stdout, "no stores in this state dir")
	}
	for _, s := range out {
		cp := "no checkpoint"
		if s.Checkpoint != nil {
			cp = fmt.Sprintf("changelog checkpoint %d", *s.Checkpoint)
			if s.Writer != 0 {
				cp += fmt.Sprintf(" (writer generation %d)", s.Writer)
			}
		}
		fmt.Fprintf(stdout, "store %s partition %d  %s  %d rows  %s\n", s.Store, s.Partition, s.Kind, s.Rows, cp)
	}
	return nil
}

func runInspectGet(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect get", getSynopsis, stderr)
	dir := fs.String("state-dir", "", "the application's state `directory` (WithStateDir)")
	store := fs.String("store", "", "the store's `name`")
	partition := fs.Int("partition", -1, "the store `partition`")
	partitions := fs.Int("partitions", 0, "the partition `count`: compute the key's partition")
	key := fs.String("key", "", "the `key`")
	asInt := fs.Bool("int64", false, "the key is a decimal int64 (serde.Int64)")
	asHex := fs.Bool("hex", false, "the key is hex")
	from := fs.Int64("from", math.MinInt64/2, "window and session stores: earliest window `ms`")
	to := fs.Int64("to", math.MaxInt64/2, "window and session stores: latest window `ms`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	usage := func(msg string) error {
		fmt.Fprintln(stderr, "weir inspect get: "+msg)
		fs.Usage()
		return errUsage
	}
	switch {
	case *dir == "" || *store == "":
		return usage("--state-dir and --store are required")
	case (*partition < 0) == (*partitions <= 0):
		return usage("give one of --partition and --partitions")
	case *asInt && *asHex:
		return usage("--int64 and --hex exclude each other")
	}
	kb := []byte(*key)
	switch {
	case *asInt:
		n, err := strconv.ParseInt(*key, 10, 64)
		if err != nil {
			return usage(fmt.Sprintf("key %q is no int64", *key))
		}
		kb = binary.BigEndian.AppendUint64(nil, uint64(n))
	case *asHex:
		var err error
		if kb, err = hex.DecodeString(*key); err != nil {
			return usage(fmt.Sprintf("key %q is no hex: %v", *key, err))
		}
	}
	p := int32(*partition)
	if *partitions > 0 {
		var err error
		if p, err = kafka.PartitionForKey(kb, int32(*partitions)); err != nil {
			return err
		}
	}
	db, err := openStores(*dir)
	if err != nil {
		return err
	}
	defer db.Close()
	kind, err := storeKind(db, *store, p)
	if err != nil {
		return err
	}
	s, err := db.Reader(statestore.Spec{Name: *store, Kind: kind}, p)
	if err != nil {
		return err
	}
	defer s.Close()
	found := 0
	show := func(prefix string, v []byte) {
		found++
		fmt.Fprintf(stdout, "%s%s\n", prefix, describeValue(v))
	}
	switch st := s.(type) {
	case statestore.KeyValueStore:
		v, ok, err := st.Get(kb)
		if err != nil {
			return err
		}
		if ok {
			show("", v)
		}
	case statestore.WindowStore:
		it, err := st.Fetch(kb, time.UnixMilli(*from), time.UnixMilli(*to))
		if err != nil {
			return err
		}
		defer it.Close()
		for it.Next() {
			show(fmt.Sprintf("window start %d: ", it.Window().UnixMilli()), it.Value())
		}
		if err := it.Err(); err != nil {
			return err
		}
	case statestore.SessionStore:
		it, err := st.FindSessions(kb, time.UnixMilli(*from), time.UnixMilli(*to))
		if err != nil {
			return err
		}
		defer it.Close()
		for it.Next() {
			show(fmt.Sprintf("session [%d, %d]: ", it.Start().UnixMilli(), it.End().UnixMilli()), it.Value())
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	if found == 0 {
		return fmt.Errorf("store %q partition %d has no key %q", *store, p, *key)
	}
	return nil
}

// storeKind returns the recorded kind of a store partition.
func storeKind(db *badgerstore.DB, store string, p int32) (statestore.Kind, error) {
	stats, err := db.Stats()
	if err != nil {
		return 0, err
	}
	for _, s := range stats {
		if s.Store == store && s.Partition == p && s.Kind != 0 {
			return s.Kind, nil
		}
	}
	return 0, errors.New("no store " + strconv.Quote(store) + " partition " + strconv.Itoa(int(p)) + " in this state dir (weir inspect stores lists them)")
}

// describeValue prints a value as text, int64 and hex, as it may be.
func describeValue(v []byte) string {
	s := ""
	if utf8.Valid(v) {
		s = strconv.Quote(string(v)) + "  "
	}
	if len(v) == 8 {
		s += fmt.Sprintf("int64 %d  ", int64(binary.BigEndian.Uint64(v)))
	}
	return s + "hex " + hex.EncodeToString(v)
}

// quietLogger passes on Badger's warnings and errors only.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
