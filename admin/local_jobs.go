package admin

import (
	"context"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Local's jobs, rollouts and webhooks.

func (l *Local) JobCounts(ctx context.Context) ([]registry.JobCount, error) {
	return l.Reg.JobCounts(l.as(ctx))
}

func (l *Local) QueueHealth(ctx context.Context, cluster string) (*registry.QueueHealth, error) {
	return l.Reg.QueueHealth(l.as(ctx), cluster)
}

func (l *Local) FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error) {
	return l.Reg.FleetQueueHealth(l.as(ctx))
}

func (l *Local) SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, bool, error) {
	return l.Reg.SubmitJob(l.as(ctx), s)
}

func (l *Local) ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	return l.Reg.ListJobs(l.as(ctx), p)
}

func (l *Local) CountJobs(ctx context.Context, p registry.JobListParams) (int, error) {
	return l.Reg.CountJobs(l.as(ctx), p)
}

func (l *Local) ListStuckJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	return l.Reg.ListStuckJobs(l.as(ctx), p)
}

func (l *Local) GetJob(ctx context.Context, id string) (*registry.Job, error) {
	return l.Reg.GetJob(l.as(ctx), id)
}

func (l *Local) ShowJobPayload(ctx context.Context, id string) (*registry.Job, error) {
	return l.Reg.ShowJobPayload(l.as(ctx), id)
}

func (l *Local) WaitJob(ctx context.Context, id string) (*registry.Job, error) {
	return l.Reg.WaitJob(l.as(ctx), id)
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

func (l *Local) RetryJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return l.Reg.RetryJob(l.as(ctx), id, reason)
}

func (l *Local) DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return l.Reg.DeleteJob(l.as(ctx), id, reason)
}

func (l *Local) ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error) {
	return l.Reg.ExtendLease(l.as(ctx), id, by)
}

func (l *Local) CreateRollout(ctx context.Context, spec registry.RolloutSpec) (*registry.Rollout, error) {
	return l.Reg.CreateRollout(l.as(ctx), spec)
}

func (l *Local) ListRollouts(ctx context.Context, p registry.RolloutListParams) ([]registry.Rollout, error) {
	return l.Reg.ListRollouts(l.as(ctx), p)
}

func (l *Local) GetRollout(ctx context.Context, ref string) (*registry.Rollout, error) {
	return l.Reg.GetRollout(l.as(ctx), ref)
}

func (l *Local) PauseRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return l.Reg.PauseRollout(l.as(ctx), ref, reason)
}

func (l *Local) ResumeRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return l.Reg.ResumeRollout(l.as(ctx), ref, reason)
}

func (l *Local) AbortRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return l.Reg.AbortRollout(l.as(ctx), ref, reason)
}

func (l *Local) RetryFailedRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error) {
	return l.Reg.RetryFailedRollout(l.as(ctx), ref, reason)
}

// StepRollout advances the rollout: no server need run.
func (l *Local) StepRollout(ctx context.Context, id string) (*registry.Rollout, error) {
	return l.Reg.AdvanceRollout(l.as(ctx), id)
}

func (l *Local) CreateWebhook(ctx context.Context, name, url string, events []string, org string) (*registry.Webhook, registry.Secret, error) {
	return l.Reg.CreateWebhook(l.as(ctx), name, url, events, org)
}

func (l *Local) ListWebhooks(ctx context.Context) ([]registry.Webhook, error) {
	return l.Reg.ListWebhooks(l.as(ctx))
}

func (l *Local) GetWebhook(ctx context.Context, ref string) (*registry.Webhook, error) {
	return l.Reg.GetWebhook(l.as(ctx), ref)
}

func (l *Local) UpdateWebhook(ctx context.Context, ref string, version int64, edit registry.WebhookEdit) (*registry.Webhook, error) {
	return l.Reg.UpdateWebhook(l.as(ctx), ref, version, edit)
}

func (l *Local) DeleteWebhook(ctx context.Context, ref string) (*registry.Webhook, error) {
	return l.Reg.DeleteWebhook(l.as(ctx), ref)
}

func (l *Local) RotateWebhookSecret(ctx context.Context, ref string, overlap time.Duration) (*registry.Webhook, registry.Secret, error) {
	return l.Reg.RotateWebhookSecret(l.as(ctx), ref, overlap)
}

func (l *Local) SendTestWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error) {
	return l.Reg.SendTestWebhook(l.as(ctx), ref)
}

func (l *Local) WebhookDeliveries(ctx context.Context, ref string, limit int) (*registry.Webhook, []registry.WebhookDelivery, error) {
	return l.Reg.WebhookDeliveries(l.as(ctx), ref, limit)
}

func (l *Local) GetWebhookDelivery(ctx context.Context, ref string) (*registry.WebhookDelivery, *registry.Webhook, error) {
	return l.Reg.GetWebhookDelivery(l.as(ctx), ref)
}

func (l *Local) RedeliverWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error) {
	return l.Reg.RedeliverWebhook(l.as(ctx), ref)
}
