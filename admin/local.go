package admin

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Local is the Service over a registry in this process. Every call is made
// as Actor: the audit trail attributes its changes to it.
type Local struct {
	Reg   *registry.Registry
	Actor registry.Actor
}

var _ Service = (*Local)(nil)

// NewLocal returns the Service over reg whose actions are attributed to
// actor.
func NewLocal(reg *registry.Registry, actor registry.Actor) *Local {
	return &Local{Reg: reg, Actor: actor}
}

func (l *Local) as(ctx context.Context) context.Context { return registry.WithActor(ctx, l.Actor) }

func (l *Local) Now() time.Time { return l.Reg.Now() }

func (l *Local) Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error) {
	return l.Reg.Watch(l.as(ctx), p)
}

func (l *Local) LatestSeq(ctx context.Context) (int64, error) { return l.Reg.LatestSeq(l.as(ctx)) }

func (l *Local) ListClusters(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error) {
	return l.Reg.ListClusters(l.as(ctx), p)
}

func (l *Local) GetCluster(ctx context.Context, ref string) (*registry.Cluster, error) {
	return l.Reg.GetCluster(l.as(ctx), ref)
}

func (l *Local) CreateCluster(ctx context.Context, spec registry.ClusterSpec, ttl time.Duration) (*registry.Cluster, *registry.IssuedToken, error) {
	return l.Reg.CreateCluster(l.as(ctx), spec, ttl)
}

func (l *Local) UpdateCluster(ctx context.Context, id string, version int64, spec registry.ClusterSpec) (*registry.Cluster, error) {
	return l.Reg.UpdateCluster(l.as(ctx), id, version, spec)
}

func (l *Local) ModifyCluster(ctx context.Context, ref string, edit func(*registry.ClusterSpec) error) (*registry.Cluster, error) {
	return l.Reg.ModifyCluster(l.as(ctx), ref, edit)
}

func (l *Local) SetClusterEnabled(ctx context.Context, ref string, enabled bool, reason string) (*registry.Cluster, error) {
	return l.Reg.SetClusterEnabled(l.as(ctx), ref, enabled, reason)
}

func (l *Local) SetClusterPaused(ctx context.Context, ref string, paused bool, reason string) (*registry.Cluster, error) {
	return l.Reg.SetClusterPaused(l.as(ctx), ref, paused, reason)
}

func (l *Local) DeleteCluster(ctx context.Context, ref, reason string) (*registry.Cluster, error) {
	return l.Reg.DeleteCluster(l.as(ctx), ref, reason)
}

func (l *Local) RotateSigningKey(ctx context.Context, ref string, overlap time.Duration) (*registry.SigningKey, error) {
	return l.Reg.RotateSigningKey(l.as(ctx), ref, overlap)
}

func (l *Local) IssueToken(ctx context.Context, cluster string, ttl time.Duration) (*registry.IssuedToken, error) {
	return l.Reg.IssueToken(l.as(ctx), cluster, ttl)
}

func (l *Local) ListTokens(ctx context.Context, cluster string) ([]registry.RegistrationToken, error) {
	return l.Reg.ListTokens(l.as(ctx), cluster)
}

func (l *Local) RevokeToken(ctx context.Context, id, reason string) (*registry.RegistrationToken, error) {
	return l.Reg.RevokeToken(l.as(ctx), id, reason)
}

func (l *Local) ListCredentials(ctx context.Context, cluster string) ([]registry.Credential, error) {
	return l.Reg.ListCredentials(l.as(ctx), cluster)
}

func (l *Local) ForceRotation(ctx context.Context, cluster, reason string) (registry.ForcedRotation, error) {
	return l.Reg.ForceRotationOutcome(l.as(ctx), cluster, reason)
}

func (l *Local) RotationGrace() time.Duration { return l.Reg.Config().RotationGrace }

func (l *Local) RevokeCredentials(ctx context.Context, cluster, reason string) (int, error) {
	return l.Reg.RevokeCredentials(l.as(ctx), cluster, reason)
}

func (l *Local) IssueAdminToken(ctx context.Context, spec registry.AdminTokenSpec) (*registry.IssuedAdminToken, error) {
	return l.Reg.IssueAdminToken(l.as(ctx), spec)
}

func (l *Local) SetAdminTokenSSHKeys(ctx context.Context, ref string, keys []string) (*registry.AdminToken, error) {
	return l.Reg.SetAdminTokenSSHKeys(l.as(ctx), ref, keys)
}

func (l *Local) ListAdminTokens(ctx context.Context) ([]registry.AdminToken, error) {
	return l.Reg.ListAdminTokens(l.as(ctx))
}

func (l *Local) RevokeAdminToken(ctx context.Context, ref, reason string) (*registry.AdminToken, error) {
	return l.Reg.RevokeAdminToken(l.as(ctx), ref, reason)
}

func (l *Local) InitCA(ctx context.Context, replace bool) (*registry.CertificateAuthority, error) {
	return l.Reg.InitCA(l.as(ctx), replace)
}

func (l *Local) CAs(ctx context.Context) ([]registry.CertificateAuthority, error) {
	return l.Reg.CAs(l.as(ctx))
}

func (l *Local) ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error) {
	return l.Reg.ListEvents(l.as(ctx), p)
}

func (l *Local) ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error) {
	return l.Reg.ListAudit(l.as(ctx), p)
}
