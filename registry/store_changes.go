package registry

import (
	"context"
	"time"
)

// ChangeStore is the part of Store that keeps the change feed watchers
// follow: every write appends to it in its own transaction.
type ChangeStore interface {
	// ChangesSince returns change-feed entries with Seq > after, oldest first.
	ChangesSince(ctx context.Context, after int64, limit int) ([]Change, error)
	// ChangesLatest returns the newest change's Seq and the oldest position a
	// watcher can resume from (every entry after it is still kept). A new store's feed holds one bookkeeping entry, so that the latest
	// Seq is never 0 (zero asks Watch for a snapshot).
	ChangesLatest(ctx context.Context) (latest, oldest int64, err error)
	// ChangesPrune forgets change-feed entries written before p.Before, but
	// always keeps the newest p.Keep.
	ChangesPrune(ctx context.Context, p ChangesPruneParams) (int, error)
	// NotifyChanges sends on ch (without blocking; a full channel already
	// holds a wake-up) once as soon as it is listening, and then whenever the
	// change feed may have grown: at once for writes through this Store, and
	// within a short interval for writes by other processes. It returns when
	// ctx is done.
	NotifyChanges(ctx context.Context, ch chan<- struct{}) error
}

type ChangesPruneParams struct {
	Before time.Time
	Keep   int
}

// EntityKind names what a change-feed entry is about.
type EntityKind string

const (
	EntityCluster    EntityKind = "cluster" // the record or its status
	EntityToken      EntityKind = "token"
	EntityCredential EntityKind = "credential"
	EntityJob        EntityKind = "job"
	EntityEvent      EntityKind = "event"
	EntityAudit      EntityKind = "audit"
	EntityRollout    EntityKind = "rollout"
)

// ChangeOp is what happened to the entity.
type ChangeOp string

const (
	OpUpsert ChangeOp = "upsert"
	OpDelete ChangeOp = "delete"
	// OpStatus is a cluster's observed status changing (a heartbeat: its
	// time and conditions), not its record: watchers get the cluster as for
	// an upsert; the record cache and held polls, which read only the
	// record, ignore it.
	OpStatus ChangeOp = "status"
)

// Change is one change-feed entry, written in the transaction that made the
// change. It names the entity; watchers read the entity itself.
type Change struct {
	Seq       int64      `json:"seq"`
	Kind      EntityKind `json:"kind"`
	ID        string     `json:"id"`
	ClusterID string     `json:"clusterId,omitempty"`
	Op        ChangeOp   `json:"op"`
	// JobState is a job's state after the change, so that long-poll wake-ups
	// need not read the job.
	JobState JobState  `json:"jobState,omitempty"`
	At       time.Time `json:"at"`
}
