package registry

import (
	"context"
	"time"
)

// ClusterStore is the part of Store that keeps clusters.
// Every method that writes is atomic, as Store's are.
type ClusterStore interface {
	// ClusterCreate inserts a cluster, its first registration token (optional)
	// and audit entries. CodeConflict if the name is taken.
	ClusterCreate(ctx context.Context, p ClusterCreateParams) error
	// ClusterGet returns a cluster with its observed status.
	ClusterGet(ctx context.Context, id string) (*Cluster, error)
	// ClusterGetByName finds a cluster by its display name (case-insensitive).
	ClusterGetByName(ctx context.Context, name string) (*Cluster, error)
	// ClusterList returns clusters ordered by name.
	ClusterList(ctx context.Context, p ClusterListParams) ([]Cluster, error)
	// ClusterUpdate replaces the spec if the stored version is p.Version, and
	// increments the version. A stale version is CodeConflict, and the error
	// message names the current version.
	ClusterUpdate(ctx context.Context, p ClusterUpdateParams) (*Cluster, error)
	// ClusterSetEnabled disables a cluster, or enables it back to Active
	// (Pending if it never registered). It increments the version.
	ClusterSetEnabled(ctx context.Context, p ClusterSetEnabledParams) (*Cluster, error)
	// ClusterSetPaused pauses a cluster's queue (PausedAt = p.Now, with
	// p.Reason) or resumes it, and increments the version.
	ClusterSetPaused(ctx context.Context, p ClusterSetPausedParams) (*Cluster, error)
	// ClusterDelete deletes a cluster and everything it owns (status, tokens,
	// credentials, jobs and their history, events) in one transaction.
	ClusterDelete(ctx context.Context, p ClusterDeleteParams) error
}

type ClusterCreateParams struct {
	Cluster Cluster
	Token   *RegistrationToken
	Audit   []AuditEntry
}

type ClusterListParams struct {
	State        ClusterState
	Organization string
	// Selector is a label selector (ParseSelector). The registry applies it;
	// stores ignore it (a fleet's clusters fit in memory, and label matching
	// is the Kubernetes library's, not SQL's).
	Selector string
	// After, when set, lists only the clusters that come after this one in
	// the list's order: name with ASCII letters folded to lower case and
	// every other byte compared as it is (SQLite's NOCASE), then id. Both
	// stores sort in exactly that order, so a page cut on one resumes on
	// the same cluster on the other.
	After *ClusterCursor
	// Limit, when positive, is the most clusters listed. With a selector
	// it counts the matching clusters (the registry reads on until it has
	// them).
	Limit int
}

// ClusterCursor is a position in a list of clusters: the last cluster of a
// page.
type ClusterCursor struct {
	Name string
	ID   string
}

type ClusterUpdateParams struct {
	ID      string
	Version int64
	Spec    ClusterSpec
	Now     time.Time
	Audit   AuditEntry
}

type ClusterSetEnabledParams struct {
	ID      string
	Enabled bool
	Now     time.Time
	Audit   AuditEntry
}

type ClusterSetPausedParams struct {
	ID     string
	Paused bool
	Now    time.Time
	Reason string
	Audit  AuditEntry
}

type ClusterDeleteParams struct {
	ID    string
	Audit AuditEntry
}
