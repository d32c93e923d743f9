// Package admin is what administering tether means, once: the interface
// Service, which the CLI's admin commands and the console both use, and its
// two implementations. Local serves it from a registry in this process (the
// CLI over --db, the console beside a server, the SSH console); Remote
// serves it over a tether's admin API with adminclient's typed methods (the
// CLI and the console with --server or a saved context).
//
// Both answer with the registry's records and errors: a refusal over the
// API comes back as a registry error with the server's code and message
// (see apiError), so a command prints, and the console shows, the same
// either way. A new admin action is added here (to the interface, both
// implementations and the parity test) after the registry and the API.
package admin

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Service is everything an admin reads and does. Refs are ids or names
// where the registry takes either.
type Service interface {
	// Now is the registry's clock: every age and countdown is measured
	// against it (over the API, this machine's corrected by the skew
	// measured at connection).
	Now() time.Time
	// Watch streams changes from the feed position since (see
	// registry.Registry.Watch); LatestSeq is the current position.
	Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error)
	LatestSeq(ctx context.Context) (int64, error)

	Clusters
	Access
	Jobs
	Rollouts
	Webhooks
	Feeds
}

// Clusters are the cluster records.
type Clusters interface {
	// ListClusters is every cluster matching p, all pages (p's Limit and
	// cursor aside).
	ListClusters(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error)
	GetCluster(ctx context.Context, ref string) (*registry.Cluster, error)
	CreateCluster(ctx context.Context, spec registry.ClusterSpec, tokenTTL time.Duration) (*registry.Cluster, *registry.IssuedToken, error)
	// UpdateCluster writes spec whole if the cluster is still at version.
	UpdateCluster(ctx context.Context, id string, version int64, spec registry.ClusterSpec) (*registry.Cluster, error)
	// ModifyCluster applies edit to the cluster as it is and writes it,
	// again on the version a concurrent change left
	// (registry.Registry.ModifyCluster).
	ModifyCluster(ctx context.Context, ref string, edit func(*registry.ClusterSpec) error) (*registry.Cluster, error)
	SetClusterEnabled(ctx context.Context, ref string, enabled bool, reason string) (*registry.Cluster, error)
	SetClusterPaused(ctx context.Context, ref string, paused bool, reason string) (*registry.Cluster, error)
	DeleteCluster(ctx context.Context, ref, reason string) (*registry.Cluster, error)
	RotateSigningKey(ctx context.Context, ref string, overlap time.Duration) (*registry.SigningKey, error)
}

// Access is who may do what: registration tokens, agent credentials, admin
// tokens and tether's CA.
type Access interface {
	IssueToken(ctx context.Context, cluster string, ttl time.Duration) (*registry.IssuedToken, error)
	// ListTokens returns a cluster's tokens, or every cluster's when
	// cluster is empty.
	ListTokens(ctx context.Context, cluster string) ([]registry.RegistrationToken, error)
	// RevokeToken takes the token's id, or the secret itself (only the id
	// it carries is used).
	RevokeToken(ctx context.Context, id, reason string) (*registry.RegistrationToken, error)
	ListCredentials(ctx context.Context, cluster string) ([]registry.Credential, error)
	// ForceRotation makes the cluster's live credentials due now, and says
	// how long they keep working unless the agent rotates (the server's
	// setting) and warns when the agent has never rotated
	// (registry.Registry.ForceRotationOutcome).
	ForceRotation(ctx context.Context, cluster, reason string) (registry.ForcedRotation, error)
	// RotationGrace is how long a force-rotated credential keeps working
	// unless its agent rotates; 0: not known (over the API, which says it
	// only in a forced rotation's answer).
	RotationGrace() time.Duration
	RevokeCredentials(ctx context.Context, cluster, reason string) (int, error)

	// IssueAdminToken creates an admin identity with its token (shown
	// once) and the SSH public keys it may open the console with.
	IssueAdminToken(ctx context.Context, spec registry.AdminTokenSpec) (*registry.IssuedAdminToken, error)
	// SetAdminTokenSSHKeys replaces an admin identity's SSH public keys
	// (authorized_keys lines; none takes them all away).
	SetAdminTokenSSHKeys(ctx context.Context, ref string, keys []string) (*registry.AdminToken, error)
	ListAdminTokens(ctx context.Context) ([]registry.AdminToken, error)
	RevokeAdminToken(ctx context.Context, ref, reason string) (*registry.AdminToken, error)

	// InitCA creates tether's CA, or with replace one that replaces it;
	// admin only (registry.Registry.InitCA).
	InitCA(ctx context.Context, replace bool) (*registry.CertificateAuthority, error)
	// CAs is the current CA first, then replaced ones still trusted; empty
	// when tether has none.
	CAs(ctx context.Context) ([]registry.CertificateAuthority, error)
}

// Jobs are the jobs, their queues and the job actions.
type Jobs interface {
	JobCounts(ctx context.Context) ([]registry.JobCount, error)
	// QueueHealth is one cluster's queue health; FleetQueueHealth every
	// visible cluster's.
	QueueHealth(ctx context.Context, cluster string) (*registry.QueueHealth, error)
	FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error)

	// SubmitJob queues a job (registry.Registry.SubmitJob): created is
	// false when an idempotency key answered a job already, and that job
	// is returned.
	SubmitJob(ctx context.Context, s registry.JobSubmission) (job *registry.Job, created bool, err error)
	// ListJobs is the jobs matching p, p.Limit of them (0: the registry's
	// default, 100). Over the API it pages by offset, and keyset paging
	// (After) is refused.
	ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error)
	// CountJobs counts them; with After, the ones after that job's place.
	CountJobs(ctx context.Context, p registry.JobListParams) (int, error)
	ListStuckJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error)
	GetJob(ctx context.Context, id string) (*registry.Job, error)
	// ShowJobPayload is GetJob with a sealed payload opened: an admin's
	// explicit, audited act.
	ShowJobPayload(ctx context.Context, id string) (*registry.Job, error)
	// WaitJob returns the job once it has ended, or ctx's error.
	WaitJob(ctx context.Context, id string) (*registry.Job, error)
	JobHistory(ctx context.Context, id string) ([]registry.JobHistoryEntry, error)
	RequeueJob(ctx context.Context, id, reason string) (*registry.Job, error)
	// RequeueJobWith is RequeueJob with its options: the expiry of a job
	// that would expire at once extended with the requeue, and the attempt
	// meant (a job at another attempt is left alone: CodeConflict).
	RequeueJobWith(ctx context.Context, id string, o registry.RequeueOptions) (*registry.Job, error)
	CancelJob(ctx context.Context, id, reason string) (*registry.Job, error)
	// RetryJob submits a job that ended without doing its work again, as a
	// new job linked to it; it returns the new job.
	RetryJob(ctx context.Context, id, reason string) (*registry.Job, error)
	// DeleteJob deletes a finished job and returns it as it was.
	DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error)
	ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error)
}

// Rollouts are the rollouts and their actions.
type Rollouts interface {
	CreateRollout(ctx context.Context, spec registry.RolloutSpec) (*registry.Rollout, error)
	// ListRollouts is every rollout matching p's states, newest first:
	// locally p.Limit of them, over the API all pages.
	ListRollouts(ctx context.Context, p registry.RolloutListParams) ([]registry.Rollout, error)
	GetRollout(ctx context.Context, ref string) (*registry.Rollout, error)
	PauseRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error)
	ResumeRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error)
	AbortRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error)
	RetryFailedRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error)
	// StepRollout is what waiting on a rollout does each tick: locally,
	// advance it (no server need run); over the API, read it (the server
	// advances it).
	StepRollout(ctx context.Context, id string) (*registry.Rollout, error)
}

// Webhooks are the webhook subscriptions and their deliveries.
type Webhooks interface {
	CreateWebhook(ctx context.Context, name, url string, events []string, org string) (*registry.Webhook, registry.Secret, error)
	ListWebhooks(ctx context.Context) ([]registry.Webhook, error)
	GetWebhook(ctx context.Context, ref string) (*registry.Webhook, error)
	UpdateWebhook(ctx context.Context, ref string, version int64, edit registry.WebhookEdit) (*registry.Webhook, error)
	DeleteWebhook(ctx context.Context, ref string) (*registry.Webhook, error)
	RotateWebhookSecret(ctx context.Context, ref string, overlap time.Duration) (*registry.Webhook, registry.Secret, error)
	SendTestWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error)
	// WebhookDeliveries answers the webhook's record too locally; over the
	// API, nil (its answer is the deliveries alone).
	WebhookDeliveries(ctx context.Context, ref string, limit int) (*registry.Webhook, []registry.WebhookDelivery, error)
	// GetWebhookDelivery answers the delivery's webhook too locally; over
	// the API, nil.
	GetWebhookDelivery(ctx context.Context, ref string) (*registry.WebhookDelivery, *registry.Webhook, error)
	RedeliverWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error)
}

// Feeds are the events agents report and the audit trail, paged by id.
type Feeds interface {
	ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error)
	ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error)
}

// RolloutAction does one of a rollout's actions by its name, as the
// console's keys and the API's paths name them: "pause", "resume", "abort"
// or "retry-failed".
func RolloutAction(ctx context.Context, s Service, ref, action, reason string) (*registry.Rollout, error) {
	switch action {
	case "pause":
		return s.PauseRollout(ctx, ref, reason)
	case "resume":
		return s.ResumeRollout(ctx, ref, reason)
	case "abort":
		return s.AbortRollout(ctx, ref, reason)
	case "retry-failed":
		return s.RetryFailedRollout(ctx, ref, reason)
	}
	return nil, registry.Errorf(registry.CodeInvalid, "rollout action %q is not one of pause, resume, abort, retry-failed", action)
}
