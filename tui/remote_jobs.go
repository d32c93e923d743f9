package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The remote backend's jobs: lists and counts with the console's filters,
// a job and its timeline, and the job actions, over the admin API.

// jobQuery is GET /jobs' query for p's filters.
func jobQuery(p registry.JobListParams) (url.Values, error) {
	if p.After != nil {
		return nil, registry.Errorf(registry.CodeInvalid, "keyset paging (After) is not offered over the admin API's console backend; use Offset")
	}
	q := url.Values{}
	if len(p.ClusterIDs) > 0 {
		q.Set("cluster", strings.Join(p.ClusterIDs, ","))
	}
	if len(p.ExceptClusterIDs) > 0 {
		q.Set("exceptCluster", strings.Join(p.ExceptClusterIDs, ","))
	}
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, s := range p.States {
			states[i] = string(s)
		}
		q.Set("state", strings.Join(states, ","))
	}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("kind", string(p.Kind))
	set("search", p.Search)
	set("error", p.Error)
	for k, t := range map[string]time.Time{"leaseExpiredBefore": p.LeaseExpiredBefore, "leaseLiveAt": p.LeaseLiveAt, "activityBefore": p.ActivityBefore, "finishedAfter": p.FinishedAfter} {
		if !t.IsZero() {
			q.Set(k, t.UTC().Format(time.RFC3339Nano))
		}
	}
	if p.NoLease {
		q.Set("noLease", "true")
	}
	if p.OldestFirst {
		q.Set("order", "oldest")
	}
	return q, nil
}

// ListJobs pages through GET /jobs by offset: a Limit above the API's page,
// or none, takes several requests.
func (r *Remote) ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	q, err := jobQuery(p)
	if err != nil {
		return nil, err
	}
	var out []registry.Job
	for {
		want := remotePage
		if p.Limit > 0 {
			want = min(remotePage, p.Limit-len(out))
		}
		q.Set("limit", strconv.Itoa(want))
		q.Set("offset", strconv.Itoa(p.Offset+len(out)))
		var page items[registry.Job]
		if err := r.call(ctx, http.MethodGet, "/jobs", q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(page.Items) < want || (p.Limit > 0 && len(out) >= p.Limit) {
			return out, nil
		}
	}
}

// CountJobs passes After as ?after=JOB_ID (the server reads the job's
// place in the order itself), which the jobs view counts a moved
// selection's row by.
func (r *Remote) CountJobs(ctx context.Context, p registry.JobListParams) (int, error) {
	after := p.After
	p.After = nil
	q, err := jobQuery(p)
	if err == nil && after != nil {
		q.Set("after", after.ID)
	}
	if err != nil {
		return 0, err
	}
	var out struct {
		Count int `json:"count"`
	}
	err = r.call(ctx, http.MethodGet, "/jobs/count", q, nil, &out)
	return out.Count, err
}

func (r *Remote) JobCounts(ctx context.Context) ([]registry.JobCount, error) {
	var stats struct {
		Clusters map[string]map[registry.JobState]int64 `json:"clusters"`
	}
	if err := r.call(ctx, http.MethodGet, "/stats", nil, nil, &stats); err != nil {
		return nil, err
	}
	var out []registry.JobCount
	for id, states := range stats.Clusters {
		for st, n := range states {
			if n > 0 {
				out = append(out, registry.JobCount{ClusterID: id, State: st, Count: n})
			}
		}
	}
	return out, nil
}

func (r *Remote) QueueHealth(ctx context.Context) ([]registry.QueueHealth, error) {
	var page items[registry.QueueHealth]
	err := r.call(ctx, http.MethodGet, "/queues", nil, nil, &page)
	return page.Items, err
}

// remoteJob is GET /jobs/{id}: the job and its timeline.
type remoteJob struct {
	registry.Job
	Timeline []registry.JobHistoryEntry `json:"timeline"`
}

func (r *Remote) jobWithTimeline(ctx context.Context, id string) (*remoteJob, error) {
	var d remoteJob
	if err := r.call(ctx, http.MethodGet, ref("jobs", id), nil, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

func (r *Remote) GetJob(ctx context.Context, id string) (*registry.Job, error) {
	d, err := r.jobWithTimeline(ctx, id)
	if err != nil {
		return nil, err
	}
	return &d.Job, nil
}

// ShowJobPayload asks for the job with its sealed payload shown
// (?showPayload=true): admin only, audited by the server.
func (r *Remote) ShowJobPayload(ctx context.Context, id string) (*registry.Job, error) {
	var d remoteJob
	if err := r.call(ctx, http.MethodGet, ref("jobs", id), url.Values{"showPayload": {"true"}}, nil, &d); err != nil {
		return nil, err
	}
	return &d.Job, nil
}

func (r *Remote) JobHistory(ctx context.Context, id string) ([]registry.JobHistoryEntry, error) {
	d, err := r.jobWithTimeline(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.Timeline, nil
}

func (r *Remote) jobAction(ctx context.Context, id, action string, body any) (*registry.Job, error) {
	var j registry.Job
	if err := r.call(ctx, http.MethodPost, ref("jobs", id, action), nil, body, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

func (r *Remote) RequeueJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return r.jobAction(ctx, id, "requeue", reasonBody(reason))
}

// RequeueJobWith sends the options in the requeue's body.
func (r *Remote) RequeueJobWith(ctx context.Context, id string, o registry.RequeueOptions) (*registry.Job, error) {
	body := map[string]string{}
	if o.Reason != "" {
		body["reason"] = o.Reason
	}
	if o.ExtendExpiry > 0 {
		body["extendExpiry"] = o.ExtendExpiry.String()
	}
	return r.jobAction(ctx, id, "requeue", body)
}

func (r *Remote) CancelJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return r.jobAction(ctx, id, "cancel", reasonBody(reason))
}

// RetryJob is POST /jobs/{id}/retry, answered with the new job.
func (r *Remote) RetryJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	return r.jobAction(ctx, id, "retry", reasonBody(reason))
}

// DeleteJob is DELETE /jobs/{id}, answered with the job as it was.
func (r *Remote) DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var j registry.Job
	if err := r.call(ctx, http.MethodDelete, ref("jobs", id), nil, reasonBody(reason), &j); err != nil {
		return nil, err
	}
	return &j, nil
}

func (r *Remote) ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error) {
	return r.jobAction(ctx, id, "extend-lease", map[string]string{"by": by.String()})
}

// SubmitJob is POST /jobs, as tether job submit sends it. A payload that is
// not JSON is refused here with the registry's message: it could not be
// sent as the body's payload.
func (r *Remote) SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, error) {
	if err := registry.PayloadJSONError(bytes.TrimSpace(s.Payload)); err != nil {
		return nil, err
	}
	body := map[string]any{"cluster": s.ClusterID, "kind": s.Kind, "payload": json.RawMessage(bytes.TrimSpace(s.Payload))}
	if s.IdempotencyKey != "" {
		body["idempotencyKey"] = s.IdempotencyKey
	}
	if s.ExpiresIn != 0 {
		body["expiresIn"] = s.ExpiresIn.String()
	}
	var j registry.Job
	if err := r.call(ctx, http.MethodPost, "/jobs", nil, body, &j); err != nil {
		return nil, err
	}
	return &j, nil
}
