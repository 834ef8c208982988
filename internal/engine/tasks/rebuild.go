package tasks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// Local state is a cache. The store database holds nothing its changelogs
// (and the global tables' topics) cannot rebuild, so a database Badger
// cannot open or read — a checksum, a file cut short or gone, an
// unreadable MANIFEST, another program's or layout's directory, a panic
// inside Badger — is set aside (statedir.SetAside: renamed with the time,
// the newest statedir.Keep copies kept for inspection) and a new one
// opened. Its stores have no checkpoints, so each task restores them from
// its changelog's start before it processes (catchUp), and the App shows
// Restoring meanwhile. Under exactly-once the restore reads committed
// records only, so the rebuilt state is the state of the committed
// offsets the tasks start from; under at-least-once it is at least that.
//
// What cannot be rebuilt fails instead: a store declared without a
// changelog (Spec.Logged false) would come back empty, so its damage is
// the operator's decision, and openStores names the dir, the file, the
// cause and the store.

// StoresRebuilt is the Hooks.StateRebuilt name of the store database;
// WALRebuilt that of the micro-batch write-ahead log.
const (
	StoresRebuilt = "stores"
	WALRebuilt    = "wal"
)

// openStoresOrRebuild opens the store database in dir, or sets it aside
// and opens a new one if it is damaged and every store is logged.
func (r *Runtime) openStoresOrRebuild(dir string, opts badgerstore.Options) (*badgerstore.DB, error) {
	db, err := r.openOwnStores(dir, opts)
	var d *statedir.Damage
	if err == nil || !errors.As(err, &d) {
		return db, err
	}
	if name, ok := r.unloggedStore(); ok {
		return nil, &unrebuildable{fmt.Errorf("runtime: state stores damaged: %s in %s, file %s: %v; store %q has no changelog to rebuild it from: "+
			"move %s aside to start every store empty", d.Reason, dir, orUnnamed(d.File), d.Err, name, dir)}
	}
	aside, serr := statedir.SetAside(dir, time.Now(), statedir.Keep)
	if serr != nil {
		return nil, errors.Join(err, serr)
	}
	r.log.Warn("weir: state stores damaged; set aside, rebuilding them from their changelogs",
		"dir", dir, "file", d.File, "cause", d.Reason, "err", d.Err, "set_aside_as", filepath.Base(aside), "kept", statedir.Keep)
	if h := r.cfg.Hooks.StateRebuilt; h != nil {
		h(StoresRebuilt, d.Reason)
	}
	return r.openOwnStores(dir, opts)
}

// appFile, in the store database's directory, holds the application id
// whose stores it holds: a checkpoint is an offset in that application's
// changelogs, meaningless in another's.
const appFile = "WEIR-APPLICATION"

// openOwnStores opens the store database in dir, a *statedir.Damage if it
// holds another application id's stores, and marks a new or unmarked one
// as this application's.
func (r *Runtime) openOwnStores(dir string, opts badgerstore.Options) (*badgerstore.DB, error) {
	path := filepath.Join(dir, appFile)
	id, err := os.ReadFile(path)
	if err == nil && string(id) != r.cfg.ApplicationID {
		return nil, fmt.Errorf("runtime: %w", &statedir.Damage{Dir: dir, File: appFile, Reason: statedir.ReasonForeign,
			Err: fmt.Errorf("the stores of application %q, not %q", id, r.cfg.ApplicationID)})
	}
	db, oerr := badgerstore.Open(dir, opts)
	if oerr != nil || err == nil {
		return db, oerr
	}
	if werr := os.WriteFile(path, []byte(r.cfg.ApplicationID), 0o644); werr != nil {
		return nil, errors.Join(fmt.Errorf("runtime: mark %s: %w", dir, werr), db.Close())
	}
	return db, nil
}

// unloggedStore returns the name of a store of the topology without a
// changelog, if there is one. Global stores are rebuilt from their topics.
func (r *Runtime) unloggedStore() (string, bool) {
	for _, st := range r.cfg.Graph.Subtopologies {
		for _, spec := range st.Stores {
			if !spec.Logged {
				return spec.Name, true
			}
		}
	}
	return "", false
}

// storesOpenError is openStores' error: the hint about a second instance
// only when another process holds the directory's lock.
func storesOpenError(stateDir string, err error) error {
	var u *unrebuildable
	if errors.As(err, &u) {
		return u.error
	}
	if statedir.Locked(err) {
		return fmt.Errorf("runtime: state stores in %s are in use by another process (a second instance on this machine needs its own state dir): %w", stateDir, err)
	}
	return fmt.Errorf("runtime: state stores in %s: %w", stateDir, err)
}

func orUnnamed(file string) string {
	if file == "" {
		return "(not named)"
	}
	return file
}

// unrebuildable is a damage openStoresOrRebuild cannot rebuild; its message
// is complete.
type unrebuildable struct{ error }
