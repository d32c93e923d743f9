package registry

import (
	"context"
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
	// Each area has its own file (store_<area>.go), so that it is read and
	// grown on its own.
	ClusterStore
	TokenStore
	CredentialStore
	JobStore
	EventStore
	AuditStore
	ChangeStore
	AdminTokenStore
	WebhookStore
	KeyStore
	CAStore
	SSHHostKeyStore
	ResealStore
	RetentionStore
	SearchIndexStore
	RolloutStore
	QueueStatsStore

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
