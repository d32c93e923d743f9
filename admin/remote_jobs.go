package admin

import (
	"bytes"
	"context"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// Remote's jobs: lists and counts with the console's filters, a job and
// its timeline, and the job actions.

// jobQuery is GET /jobs' query for p's filters.
func jobQuery(p registry.JobListParams) (adminclient.JobQuery, error) {
	if p.After != nil {
		return adminclient.JobQuery{}, registry.Errorf(registry.CodeInvalid, "keyset paging (After) is not offered over the admin API; use Offset")
	}
	q := adminclient.JobQuery{Clusters: p.ClusterIDs, ExceptClusters: p.ExceptClusterIDs, Kind: string(p.Kind), Search: p.Search,
		Error: p.Error, LeaseExpiredBefore: p.LeaseExpiredBefore, LeaseLiveAt: p.LeaseLiveAt, ActivityBefore: p.ActivityBefore,
		FinishedAfter: p.FinishedAfter, NoLease: p.NoLease, OldestFirst: p.OldestFirst}
	for _, s := range p.States {
		q.States = append(q.States, string(s))
	}
	return q, nil
}

func (r *Remote) JobCounts(ctx context.Context) ([]registry.JobCount, error) {
	stats, err := r.c.Stats(ctx)
	if err != nil {
		return nil, r.fail(err)
	}
	var out []registry.JobCount
	for id, states := range stats.Clusters {
		for st, n := range states {
			if n > 0 {
				out = append(out, registry.JobCount{ClusterID: id, State: registry.JobState(st), Count: n})
			}
		}
	}
	return out, nil
}

func (r *Remote) QueueHealth(ctx context.Context, cluster string) (*registry.QueueHealth, error) {
	var q registry.QueueHealth
	_, err := r.c.ClusterQueue(ctx, cluster, adminclient.Into(&q))
	return one(r, &q, err)
}

func (r *Remote) FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error) {
	var page adminclient.Page[registry.QueueHealth]
	if _, err := r.c.Queues(ctx, adminclient.Into(&page)); err != nil {
		return nil, r.fail(err)
	}
	return page.Items, nil
}

// SubmitJob is POST /jobs. A payload that is not JSON is refused here, in
// the registry's words: it could not travel inside the request's JSON.
func (r *Remote) SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, bool, error) {
	if err := registry.PayloadJSONError(s.Payload); err != nil {
		return nil, false, err
	}
	sub := adminclient.Submission{Cluster: s.ClusterID, Kind: string(s.Kind), Payload: bytes.TrimSpace(s.Payload),
		IdempotencyKey: s.IdempotencyKey}
	if s.ExpiresIn > 0 {
		sub.ExpiresIn = s.ExpiresIn.String()
	}
	var j registry.Job
	answer, err := r.c.SubmitJob(ctx, sub, 0, adminclient.Into(&j))
	if err != nil {
		return nil, false, r.fail(err)
	}
	return &j, !answer.Replayed, nil
}

// defaultJobs is how many jobs a list without a limit answers, as the
// registry's ListJobs does.
const defaultJobs = 100

// ListJobs pages through GET /jobs by offset: a Limit above the API's page
// takes several requests.
func (r *Remote) ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	q, err := jobQuery(p)
	if err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		p.Limit = defaultJobs
	}
	var out []registry.Job
	for {
		q.Limit = min(remotePage, p.Limit-len(out))
		q.Offset = p.Offset + len(out)
		var page adminclient.Page[registry.Job]
		if _, err := r.c.ListJobs(ctx, q, adminclient.Into(&page)); err != nil {
			return nil, r.fail(err)
		}
		out = append(out, page.Items...)
		if len(page.Items) < q.Limit || len(out) >= p.Limit {
			return out, nil
		}
	}
}

// CountJobs passes After as the job's id (the server reads the job's place
// in the order itself), which the console counts a moved selection's row
// by.
func (r *Remote) CountJobs(ctx context.Context, p registry.JobListParams) (int, error) {
	after := p.After
	p.After = nil
	q, err := jobQuery(p)
	if err != nil {
		return 0, err
	}
	if after != nil {
		q.After = after.ID
	}
	n, err := r.c.CountJobs(ctx, q)
	if err != nil {
		return 0, r.fail(err)
	}
	return n, nil
}

func (r *Remote) ListStuckJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	q := adminclient.JobQuery{Clusters: p.ClusterIDs, Kind: string(p.Kind), Search: p.Search, Stuck: true}
	for _, s := range p.States {
		q.States = append(q.States, string(s))
	}
	if p.Limit > 0 {
		q.Limit = min(p.Limit, remotePage)
	}
	var page adminclient.Page[registry.Job]
	if _, err := r.c.ListJobs(ctx, q, adminclient.Into(&page)); err != nil {
		return nil, r.fail(err)
	}
	return page.Items, nil
}

// remoteJob is GET /jobs/{id}: the job and its timeline.
type remoteJob struct {
	registry.Job
	Timeline []registry.JobHistoryEntry `json:"timeline"`
}

func (r *Remote) jobWithTimeline(ctx context.Context, id string) (*remoteJob, error) {
	var d remoteJob
	_, err := r.c.GetJob(ctx, id, 0, adminclient.Into(&d))
	return one(r, &d, err)
}

func (r *Remote) GetJob(ctx context.Context, id string) (*registry.Job, error) {
	d, err := r.jobWithTimeline(ctx, id)
	if err != nil {
		return nil, err
	}
	return &d.Job, nil
}

func (r *Remote) ShowJobPayload(ctx context.Context, id string) (*registry.Job, error) {
	var d remoteJob
	if _, err := r.c.ShowJobPayload(ctx, id, adminclient.Into(&d)); err != nil {
		return nil, r.fail(err)
	}
	return &d.Job, nil
}

// WaitJob asks the server to hold the answer until the job ends, again
// while it has not and ctx allows.
func (r *Remote) WaitJob(ctx context.Context, id string) (*registry.Job, error) {
	for {
		var j registry.Job
		if _, err := r.c.GetJob(ctx, id, 300*time.Second, adminclient.Into(&j)); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, r.fail(err)
		}
		if j.State.Terminal() {
			return &j, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (r *Remote) JobHistory(ctx context.Context, id string) ([]registry.JobHistoryEntry, error) {
	d, err := r.jobWithTimeline(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.Timeline, nil
}

func (r *Remote) RequeueJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var j registry.Job
	_, err := r.c.RequeueJob(ctx, id, reason, adminclient.Into(&j))
	return one(r, &j, err)
}

func (r *Remote) RequeueJobWith(ctx context.Context, id string, o registry.RequeueOptions) (*registry.Job, error) {
	var j registry.Job
	_, err := r.c.RequeueJobOpts(ctx, id, adminclient.RequeueOptions{Reason: o.Reason, ExtendExpiry: o.ExtendExpiry, Attempt: o.Attempt}, adminclient.Into(&j))
	return one(r, &j, err)
}

func (r *Remote) CancelJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var j registry.Job
	_, err := r.c.CancelJob(ctx, id, reason, adminclient.Into(&j))
	return one(r, &j, err)
}

func (r *Remote) RetryJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var j registry.Job
	_, err := r.c.RetryJob(ctx, id, reason, adminclient.Into(&j))
	return one(r, &j, err)
}

func (r *Remote) DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var j registry.Job
	_, err := r.c.DeleteJob(ctx, id, reason, adminclient.Into(&j))
	return one(r, &j, err)
}

func (r *Remote) ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error) {
	var j registry.Job
	_, err := r.c.ExtendLease(ctx, id, by, adminclient.Into(&j))
	return one(r, &j, err)
}
