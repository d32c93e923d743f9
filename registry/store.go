package registry

import (
	"context"
	"time"
)

// Store is the persistence the registry needs. Implementations (store/sqlite,
// store/postgres) make every method that writes atomic: one conditional
// statement or one transaction, with its audit entries and change-feed rows in
// the same transaction. They enforce no business rules beyond the conditions
// the params spell out; the registry decides what to ask for and what a refusal
// means. store/storetest holds the behaviour every implementation must pass.
//
// Errors: CodeNotFound for a missing record, CodeConflict for a lost
// compare-and-swap or a broken uniqueness rule, CodeUnavailable after Close
// and whenever the database cannot serve for now but may once its cause is
// gone (read-only, disk full, down, locked, shutting down), CodeInternal for
// anything else. Methods document other codes they return. A CodeUnavailable
// message says what failed, never where (no file path, no database URL): it
// reaches agents and unauthenticated probes; the cause, kept in Err, reaches
// the log.
type Store interface {
	// Areas added after the first release each have their own file
	// (store_<area>.go), so that they are read and grown on their own.
	AdminTokenStore
	WebhookStore
	KeyStore
	CAStore
	ResealStore
	RetentionStore
	RolloutStore
	QueueStatsStore
	ClusterStore
	TokenStore
	CredentialStore
	JobStore
	EventStore
	AuditStore

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

	// Ping checks the store is reachable and its schema current.
	Ping(ctx context.Context) error
	// CheckWritable makes one small real write and commits it, so that a
	// store that can be read but not written (a read-only file, directory or
	// file system, a full disk, a PostgreSQL standby or a database that is
	// down) is seen before a caller's write fails. It writes no change-feed
	// entry. CodeUnavailable when the write failed.
	CheckWritable(ctx context.Context) error
	Close() error
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
