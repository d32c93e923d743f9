package admin

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
)

// ReadOnly is s with every change refused with err, whatever a caller lets
// through: a read-only console enforces it here as well as hiding its
// actions. Reads, and ShowJobPayload (an audited read), pass.
func ReadOnly(s Service, err error) Service { return readOnly{s, err} }

type readOnly struct {
	Service
	err error
}

func (r readOnly) CreateCluster(context.Context, registry.ClusterSpec, time.Duration) (*registry.Cluster, *registry.IssuedToken, error) {
	return nil, nil, r.err
}

func (r readOnly) UpdateCluster(context.Context, string, int64, registry.ClusterSpec) (*registry.Cluster, error) {
	return nil, r.err
}

func (r readOnly) ModifyCluster(context.Context, string, func(*registry.ClusterSpec) error) (*registry.Cluster, error) {
	return nil, r.err
}

func (r readOnly) SetClusterEnabled(context.Context, string, bool, string) (*registry.Cluster, error) {
	return nil, r.err
}

func (r readOnly) SetClusterPaused(context.Context, string, bool, string) (*registry.Cluster, error) {
	return nil, r.err
}

func (r readOnly) DeleteCluster(context.Context, string, string) (*registry.Cluster, error) {
	return nil, r.err
}

func (r readOnly) RotateSigningKey(context.Context, string, time.Duration) (*registry.SigningKey, error) {
	return nil, r.err
}

func (r readOnly) IssueToken(context.Context, string, time.Duration) (*registry.IssuedToken, error) {
	return nil, r.err
}

func (r readOnly) RevokeToken(context.Context, string, string) (*registry.RegistrationToken, error) {
	return nil, r.err
}

func (r readOnly) ForceRotation(context.Context, string, string) (registry.ForcedRotation, error) {
	return registry.ForcedRotation{}, r.err
}

func (r readOnly) RevokeCredentials(context.Context, string, string) (int, error) { return 0, r.err }

func (r readOnly) IssueAdminToken(context.Context, registry.AdminTokenSpec) (*registry.IssuedAdminToken, error) {
	return nil, r.err
}

func (r readOnly) SetAdminTokenSSHKeys(context.Context, string, []string) (*registry.AdminToken, error) {
	return nil, r.err
}

func (r readOnly) RevokeAdminToken(context.Context, string, string) (*registry.AdminToken, error) {
	return nil, r.err
}

func (r readOnly) InitCA(context.Context, bool) (*registry.CertificateAuthority, error) {
	return nil, r.err
}

func (r readOnly) SubmitJob(context.Context, registry.JobSubmission) (*registry.Job, bool, error) {
	return nil, false, r.err
}

func (r readOnly) RequeueJob(context.Context, string, string) (*registry.Job, error) {
	return nil, r.err
}

func (r readOnly) RequeueJobWith(context.Context, string, registry.RequeueOptions) (*registry.Job, error) {
	return nil, r.err
}

func (r readOnly) CancelJob(context.Context, string, string) (*registry.Job, error) {
	return nil, r.err
}

func (r readOnly) RetryJob(context.Context, string, string) (*registry.Job, error) { return nil, r.err }

func (r readOnly) DeleteJob(context.Context, string, string) (*registry.Job, error) {
	return nil, r.err
}

func (r readOnly) ExtendLease(context.Context, string, time.Duration) (*registry.Job, error) {
	return nil, r.err
}

func (r readOnly) CreateRollout(context.Context, registry.RolloutSpec) (*registry.Rollout, error) {
	return nil, r.err
}

func (r readOnly) PauseRollout(context.Context, string, string) (*registry.Rollout, error) {
	return nil, r.err
}

func (r readOnly) ResumeRollout(context.Context, string, string) (*registry.Rollout, error) {
	return nil, r.err
}

func (r readOnly) AbortRollout(context.Context, string, string) (*registry.Rollout, error) {
	return nil, r.err
}

func (r readOnly) RetryFailedRollout(context.Context, string, string) (*registry.Rollout, error) {
	return nil, r.err
}

// StepRollout only reads a rollout read-only: locally it would advance it.
func (r readOnly) StepRollout(ctx context.Context, id string) (*registry.Rollout, error) {
	return r.GetRollout(ctx, id)
}

func (r readOnly) CreateWebhook(context.Context, string, string, []string, string) (*registry.Webhook, registry.Secret, error) {
	return nil, "", r.err
}

func (r readOnly) UpdateWebhook(context.Context, string, int64, registry.WebhookEdit) (*registry.Webhook, error) {
	return nil, r.err
}

func (r readOnly) DeleteWebhook(context.Context, string) (*registry.Webhook, error) {
	return nil, r.err
}

func (r readOnly) RotateWebhookSecret(context.Context, string, time.Duration) (*registry.Webhook, registry.Secret, error) {
	return nil, "", r.err
}

func (r readOnly) SendTestWebhook(context.Context, string) (*registry.WebhookDelivery, error) {
	return nil, r.err
}

func (r readOnly) RedeliverWebhook(context.Context, string) (*registry.WebhookDelivery, error) {
	return nil, r.err
}
