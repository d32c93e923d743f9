package tui

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Backend is everything the console reads and does. The console calls it only
// from tea.Cmds, never from Update or View. Local serves it from a registry
// in this process; a client of the admin API can serve it from a remote one.
// Errors carry registry codes (registry.ErrorCode) and caller-facing messages
// (registry.ErrorMessage), which the console shows as they are.
type Backend interface {
	// Now is the registry's clock: every age and countdown is measured
	// against it.
	Now() time.Time

	// Watch streams changes from the feed position since (see
	// registry.Registry.Watch); LatestSeq is the current position.
	Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error)
	LatestSeq(ctx context.Context) (int64, error)

	ListClusters(ctx context.Context) ([]registry.Cluster, error)
	GetCluster(ctx context.Context, id string) (*registry.Cluster, error)
	CreateCluster(ctx context.Context, spec registry.ClusterSpec, tokenTTL time.Duration) (*registry.Cluster, *registry.IssuedToken, error)
	UpdateCluster(ctx context.Context, id string, version int64, spec registry.ClusterSpec) (*registry.Cluster, error)
	SetClusterEnabled(ctx context.Context, id string, enabled bool, reason string) (*registry.Cluster, error)
	SetClusterPaused(ctx context.Context, id string, paused bool, reason string) (*registry.Cluster, error)
	DeleteCluster(ctx context.Context, id, reason string) (*registry.Cluster, error)

	IssueToken(ctx context.Context, clusterID string, ttl time.Duration) (*registry.IssuedToken, error)
	// ListTokens returns a cluster's tokens, or every cluster's when
	// clusterID is empty.
	ListTokens(ctx context.Context, clusterID string) ([]registry.RegistrationToken, error)
	ListCredentials(ctx context.Context, clusterID string) ([]registry.Credential, error)
	ForceRotation(ctx context.Context, clusterID, reason string) (int, error)
	// RotationGrace is how long a force-rotated credential keeps working
	// unless its agent rotates (the server's setting); 0: not known (a
	// remote console: the admin API says it only after a forced rotation).
	RotationGrace() time.Duration
	RevokeCredentials(ctx context.Context, clusterID, reason string) (int, error)

	ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error)
	CountJobs(ctx context.Context, p registry.JobListParams) (int, error)
	JobCounts(ctx context.Context) ([]registry.JobCount, error)
	// QueueHealth is every visible cluster's queue health
	// (registry.Registry.FleetQueueHealth).
	QueueHealth(ctx context.Context) ([]registry.QueueHealth, error)
	GetJob(ctx context.Context, id string) (*registry.Job, error)
	// ShowJobPayload is GetJob with a sealed payload opened: an admin's
	// explicit, audited act (registry.Registry.ShowJobPayload).
	ShowJobPayload(ctx context.Context, id string) (*registry.Job, error)
	JobHistory(ctx context.Context, id string) ([]registry.JobHistoryEntry, error)
	RequeueJob(ctx context.Context, id, reason string) (*registry.Job, error)
	// RequeueJobWith is RequeueJob with its options: the expiry of a job
	// that would expire at once extended with the requeue.
	RequeueJobWith(ctx context.Context, id string, o registry.RequeueOptions) (*registry.Job, error)
	CancelJob(ctx context.Context, id, reason string) (*registry.Job, error)
	// DeleteJob deletes a finished job (registry.Registry.DeleteJob).
	DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error)
	// RetryJob submits a job that ended without doing its work again, as a
	// new job linked to it (registry.Registry.RetryJob); it returns the new
	// job.
	RetryJob(ctx context.Context, id, reason string) (*registry.Job, error)
	ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error)
	// SubmitJob queues a job (registry.Registry.SubmitJob, POST /jobs): the
	// cluster's allowlists are checked, and a refusal carries the rule as
	// its code (namespace_not_allowed...). With an idempotency key that
	// answers a job already, that job is returned.
	SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, error)

	ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error)
	ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error)

	ListRollouts(ctx context.Context) ([]registry.Rollout, error)
	GetRollout(ctx context.Context, id string) (*registry.Rollout, error)
	// RolloutAction pauses, resumes, aborts or retries (the failed targets
	// of) a rollout: action is "pause", "resume", "abort" or "retry-failed".
	RolloutAction(ctx context.Context, id, action, reason string) (*registry.Rollout, error)

	caBackend // tether's CA (ca_backend.go)
}

// Local is the Backend over a registry in this process. Every change it makes
// is attributed to Actor in the audit trail, and every read is Actor's: an
// organization-scoped actor (a console over SSH) sees only its organization.
type Local struct {
	Reg   *registry.Registry
	Actor registry.Actor
}

var _ Backend = (*Local)(nil)

// NewLocal returns a Backend over reg whose actions are attributed to actor.
func NewLocal(reg *registry.Registry, actor registry.Actor) *Local {
	return &Local{Reg: reg, Actor: actor}
}

func (l *Local) as(ctx context.Context) context.Context { return registry.WithActor(ctx, l.Actor) }

func (l *Local) Now() time.Time { return l.Reg.Now() }

func (l *Local) RotationGrace() time.Duration { return l.Reg.Config().RotationGrace }

func (l *Local) Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error) {
	return l.Reg.Watch(l.as(ctx), p)
}

func (l *Local) LatestSeq(ctx context.Context) (int64, error) { return l.Reg.LatestSeq(l.as(ctx)) }

func (l *Local) ListClusters(ctx context.Context) ([]registry.Cluster, error) {
	return l.Reg.ListClusters(l.as(ctx), registry.ClusterListParams{})
}

func (l *Local) GetCluster(ctx context.Context, id string) (*registry.Cluster, error) {
	return l.Reg.GetCluster(l.as(ctx), id)
}

func (l *Local) CreateCluster(ctx context.Context, spec registry.ClusterSpec, ttl time.Duration) (*registry.Cluster, *registry.IssuedToken, error) {
	return l.Reg.CreateCluster(l.as(ctx), spec, ttl)
}

func (l *Local) UpdateCluster(ctx context.Context, id string, version int64, spec registry.ClusterSpec) (*registry.Cluster, error) {
	return l.Reg.UpdateCluster(l.as(ctx), id, version, spec)
}

func (l *Local) SetClusterEnabled(ctx context.Context, id string, enabled bool, reason string) (*registry.Cluster, error) {
	return l.Reg.SetClusterEnabled(l.as(ctx), id, enabled, reason)
}

func (l *Local) SetClusterPaused(ctx context.Context, id string, paused bool, reason string) (*registry.Cluster, error) {
	return l.Reg.SetClusterPaused(l.as(ctx), id, paused, reason)
}

func (l *Local) DeleteCluster(ctx context.Context, id, reason string) (*registry.Cluster, error) {
	return l.Reg.DeleteCluster(l.as(ctx), id, reason)
}

func (l *Local) IssueToken(ctx context.Context, clusterID string, ttl time.Duration) (*registry.IssuedToken, error) {
	return l.Reg.IssueToken(l.as(ctx), clusterID, ttl)
}

func (l *Local) ListTokens(ctx context.Context, clusterID string) ([]registry.RegistrationToken, error) {
	return l.Reg.ListTokens(l.as(ctx), clusterID)
}

func (l *Local) ListCredentials(ctx context.Context, clusterID string) ([]registry.Credential, error) {
	return l.Reg.ListCredentials(l.as(ctx), clusterID)
}

func (l *Local) ForceRotation(ctx context.Context, clusterID, reason string) (int, error) {
	return l.Reg.ForceRotation(l.as(ctx), clusterID, reason)
}

func (l *Local) RevokeCredentials(ctx context.Context, clusterID, reason string) (int, error) {
	return l.Reg.RevokeCredentials(l.as(ctx), clusterID, reason)
}

func (l *Local) ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	return l.Reg.ListJobs(l.as(ctx), p)
}

func (l *Local) CountJobs(ctx context.Context, p registry.JobListParams) (int, error) {
	return l.Reg.CountJobs(l.as(ctx), p)
}

func (l *Local) JobCounts(ctx context.Context) ([]registry.JobCount, error) {
	return l.Reg.JobCounts(l.as(ctx))
}

func (l *Local) QueueHealth(ctx context.Context) ([]registry.QueueHealth, error) {
	return l.Reg.FleetQueueHealth(l.as(ctx))
}

func (l *Local) GetJob(ctx context.Context, id string) (*registry.Job, error) {
	return l.Reg.GetJob(l.as(ctx), id)
}

func (l *Local) ShowJobPayload(ctx context.Context, id string) (*registry.Job, error) {
	return l.Reg.ShowJobPayload(l.as(ctx), id)
}

func (l *Local) JobHistory(ctx context.Context, id string) ([]registry.JobHistoryEntry, error) {
	return l.Reg.JobHistory(l.as(ctx), id)
}

func (l *Local) RequeueJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return l.Reg.RequeueJob(l.as(ctx), id, reason)
}

func (l *Local) RequeueJobWith(ctx context.Context, id string, o registry.RequeueOptions) (*registry.Job, error) {
	return l.Reg.RequeueJobWith(l.as(ctx), id, o)
}

func (l *Local) CancelJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return l.Reg.CancelJob(l.as(ctx), id, reason)
}

func (l *Local) DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return l.Reg.DeleteJob(l.as(ctx), id, reason)
}

func (l *Local) RetryJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return l.Reg.RetryJob(l.as(ctx), id, reason)
}

func (l *Local) ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error) {
	return l.Reg.ExtendLease(l.as(ctx), id, by)
}

func (l *Local) SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, error) {
	j, _, err := l.Reg.SubmitJob(l.as(ctx), s)
	return j, err
}

func (l *Local) ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error) {
	return l.Reg.ListEvents(l.as(ctx), p)
}

func (l *Local) ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error) {
	return l.Reg.ListAudit(l.as(ctx), p)
}

func (l *Local) ListRollouts(ctx context.Context) ([]registry.Rollout, error) {
	return l.Reg.ListRollouts(l.as(ctx), registry.RolloutListParams{Limit: 500})
}

func (l *Local) GetRollout(ctx context.Context, id string) (*registry.Rollout, error) {
	return l.Reg.GetRollout(l.as(ctx), id)
}

func (l *Local) RolloutAction(ctx context.Context, id, action, reason string) (*registry.Rollout, error) {
	act, ok := rolloutActions[action]
	if !ok {
		return nil, registry.Errorf(registry.CodeInvalid, "rollout action %q is not one of pause, resume, abort, retry-failed", action)
	}
	return act(l.Reg, l.as(ctx), id, reason)
}

var rolloutActions = map[string]func(*registry.Registry, context.Context, string, string) (*registry.Rollout, error){
	"pause": (*registry.Registry).PauseRollout, "resume": (*registry.Registry).ResumeRollout,
	"abort": (*registry.Registry).AbortRollout, "retry-failed": (*registry.Registry).RetryFailedRollout,
}

// readOnly refuses every change, whatever the console's keys let through:
// read-only mode is enforced here as well as hidden in the UI.
type readOnly struct{ Backend }

var errReadOnly = registry.Errorf(registry.CodeForbidden, "the console is read-only (started with --read-only): changes are disabled")

func (readOnly) CreateCluster(context.Context, registry.ClusterSpec, time.Duration) (*registry.Cluster, *registry.IssuedToken, error) {
	return nil, nil, errReadOnly
}

func (readOnly) UpdateCluster(context.Context, string, int64, registry.ClusterSpec) (*registry.Cluster, error) {
	return nil, errReadOnly
}

func (readOnly) SetClusterEnabled(context.Context, string, bool, string) (*registry.Cluster, error) {
	return nil, errReadOnly
}

func (readOnly) DeleteCluster(context.Context, string, string) (*registry.Cluster, error) {
	return nil, errReadOnly
}

func (readOnly) IssueToken(context.Context, string, time.Duration) (*registry.IssuedToken, error) {
	return nil, errReadOnly
}

func (readOnly) ForceRotation(context.Context, string, string) (int, error) { return 0, errReadOnly }

func (readOnly) RevokeCredentials(context.Context, string, string) (int, error) {
	return 0, errReadOnly
}

func (readOnly) RequeueJob(context.Context, string, string) (*registry.Job, error) {
	return nil, errReadOnly
}

func (readOnly) RequeueJobWith(context.Context, string, registry.RequeueOptions) (*registry.Job, error) {
	return nil, errReadOnly
}

func (readOnly) CancelJob(context.Context, string, string) (*registry.Job, error) {
	return nil, errReadOnly
}

func (readOnly) DeleteJob(context.Context, string, string) (*registry.Job, error) {
	return nil, errReadOnly
}

func (readOnly) RetryJob(context.Context, string, string) (*registry.Job, error) {
	return nil, errReadOnly
}

func (readOnly) SubmitJob(context.Context, registry.JobSubmission) (*registry.Job, error) {
	return nil, errReadOnly
}

func (readOnly) ExtendLease(context.Context, string, time.Duration) (*registry.Job, error) {
	return nil, errReadOnly
}

func (readOnly) RolloutAction(context.Context, string, string, string) (*registry.Rollout, error) {
	return nil, errReadOnly
}

func (readOnly) SetClusterPaused(context.Context, string, bool, string) (*registry.Cluster, error) {
	return nil, errReadOnly
}
