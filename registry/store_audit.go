package registry

import (
	"context"
)

// AuditStore is the part of Store that keeps the audit log.
type AuditStore interface {
	// AuditAppend writes audit entries that accompany no other change (for
	// example a refused registration).
	AuditAppend(ctx context.Context, entries ...AuditEntry) error
	// AuditList returns audit entries matching p, newest first.
	AuditList(ctx context.Context, p AuditListParams) ([]AuditEntry, error)
}

type AuditListParams struct {
	ClusterID string
	// ClusterIDs, when set, keeps these clusters' entries only: the
	// registry sets it for an actor confined to an organization.
	ClusterIDs []string
	Action     string // prefix, e.g. "job." or "credential.revoke"
	BeforeID   int64
	AfterID    int64
	Limit      int
}
