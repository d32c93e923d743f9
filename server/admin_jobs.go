package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tetherhq/tether/registry"
)

// The admin API's jobs: what producers submit and on-call steers.

// MaxAdminWait bounds ?wait= on job submission and job reads.
const MaxAdminWait = 300 * time.Second

type jobCursor struct {
	CreatedAt time.Time `json:"t"`
	ID        string    `json:"i"`
}

func (s *Server) adminListJobs(c *call) error {
	q := c.r.URL.Query()
	limit, cursor, err := pageParams(q)
	if err != nil {
		return err
	}
	p, err := s.jobFilters(c, q)
	if err != nil {
		return err
	}
	if p.Offset, err = intParam(q, "offset", 0, 1<<30); err != nil {
		return err
	}
	switch o := q.Get("order"); o {
	case "", "newest":
	case "oldest":
		p.OldestFirst = true
	default:
		return errf(registry.CodeInvalid, "order %q is not newest or oldest", o)
	}
	stuck, err := stuckParam(q)
	if err != nil {
		return err
	}
	if stuck {
		if cursor != "" {
			return errf(registry.CodeInvalid, "stuck jobs page with offset, not cursor")
		}
		return s.adminListStuck(c, p, limit)
	}
	if cursor != "" {
		var after jobCursor
		if err := decodeCursor(cursor, &after); err != nil {
			return err
		}
		p.After = &registry.JobCursor{CreatedAt: after.CreatedAt, ID: after.ID}
	}
	if p.After != nil && (p.Offset > 0 || p.OldestFirst) {
		return errf(registry.CodeInvalid, "cursor pages newest first from the start: it cannot be combined with offset or order=oldest")
	}
	p.Limit = limit + 1
	jobs, err := s.reg.ListJobs(c.ctx, p)
	if err != nil {
		return err
	}
	out := list[registry.Job]{Items: jobs}
	if len(jobs) > limit {
		last := &jobs[limit-1]
		out.Items, out.NextCursor = jobs[:limit], encodeCursor(jobCursor{last.CreatedAt, last.ID})
	}
	return writeJSON(c.w, http.StatusOK, out)
}

// jobFilters reads the filters GET /jobs and GET /jobs/count share:
// cluster, state, kind, search, and the ones the console's stuck views use
// (error, leaseExpiredBefore, noLease, activityBefore, finishedAfter).
func (s *Server) jobFilters(c *call, q url.Values) (registry.JobListParams, error) {
	var p registry.JobListParams
	for _, ref := range splitList(q["cluster"]) {
		cl, err := s.reg.GetCluster(c.ctx, ref)
		if err != nil {
			return p, err
		}
		p.ClusterIDs = append(p.ClusterIDs, cl.ID)
	}
	for _, ref := range splitList(q["exceptCluster"]) {
		cl, err := s.reg.GetCluster(c.ctx, ref)
		if err != nil {
			return p, err
		}
		p.ExceptClusterIDs = append(p.ExceptClusterIDs, cl.ID)
	}
	for _, st := range splitList(q["state"]) {
		state := registry.JobState(strings.ReplaceAll(st, "-", "_"))
		if !state.Valid() {
			return p, errf(registry.CodeInvalid, "state %q is not a job state (queued, in_progress, succeeded, failed, noop, conflict, canceled, expired)", st)
		}
		p.States = append(p.States, state)
	}
	if k := q.Get("kind"); k != "" {
		p.Kind = registry.JobKind(k)
		if p.Kind != registry.KindApply && p.Kind != registry.KindDelete && p.Kind != registry.KindIntent {
			return p, errf(registry.CodeInvalid, "kind %q is not one of apply, delete, intent", k)
		}
	}
	p.Search = q.Get("search")
	p.Error = q.Get("error")
	var err error
	for name, dst := range map[string]*time.Time{
		"leaseExpiredBefore": &p.LeaseExpiredBefore, "leaseLiveAt": &p.LeaseLiveAt, "activityBefore": &p.ActivityBefore, "finishedAfter": &p.FinishedAfter,
	} {
		if v := q.Get(name); v != "" {
			if *dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return p, errf(registry.CodeInvalid, "%s %q is not an RFC 3339 time such as 2026-11-25T06:00:00Z", name, truncate(v, 100))
			}
		}
	}
	switch v := q.Get("noLease"); v {
	case "", "false", "0":
	case "true", "1":
		p.NoLease = true
	default:
		return p, errf(registry.CodeInvalid, "noLease %q is not true or false", truncate(v, 100))
	}
	return p, nil
}

// adminCountJobs counts the jobs GET /jobs would list with the same filters.
// adminCountJobs counts what GET /jobs would list; with ?after=JOB_ID only
// the jobs after that one in the list's order (?order=oldest flips it): the
// job's place in the list, which the remote console keeps a moved selection
// by.
func (s *Server) adminCountJobs(c *call) error {
	q := c.r.URL.Query()
	p, err := s.jobFilters(c, q)
	if err != nil {
		return err
	}
	switch o := q.Get("order"); o {
	case "", "newest":
	case "oldest":
		p.OldestFirst = true
	default:
		return errf(registry.CodeInvalid, "order %q is not newest or oldest", o)
	}
	stuck, err := stuckParam(q)
	if err != nil {
		return err
	}
	if id := q.Get("after"); id != "" {
		j, err := s.reg.GetJob(c.ctx, id)
		if err != nil {
			return err
		}
		p.After = &registry.JobCursor{CreatedAt: j.CreatedAt, ID: j.ID}
	}
	if stuck {
		// The stuck jobs are a handful (what on-call reads), listed as
		// GET /jobs?stuck=true lists them, and counted here.
		after := p.After
		p.After = nil
		jobs, err := s.reg.ListStuckJobs(c.ctx, p)
		if err != nil {
			return err
		}
		n := 0
		for i := range jobs {
			if after == nil || jobComesAfter(&jobs[i], after, p.OldestFirst) {
				n++
			}
		}
		return writeJSON(c.w, http.StatusOK, map[string]int{"count": n})
	}
	n, err := s.reg.CountJobs(c.ctx, p)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, map[string]int{"count": n})
}

// stuckParam reads ?stuck=true|false.
func stuckParam(q url.Values) (bool, error) {
	switch v := q.Get("stuck"); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, errf(registry.CodeInvalid, "stuck %q is not true or false", truncate(v, 100))
	}
}

// jobComesAfter reports whether j comes after pos in a job list's order
// (registry.SortJobs): newest first, or oldest first.
func jobComesAfter(j *registry.Job, pos *registry.JobCursor, oldestFirst bool) bool {
	c := j.CreatedAt.Compare(pos.CreatedAt)
	if c == 0 {
		c = strings.Compare(j.ID, pos.ID)
	}
	if oldestFirst {
		return c > 0
	}
	return c < 0
}

// intParam reads an optional whole-number query parameter in [lo, hi].
func intParam(q url.Values, name string, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return lo, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, errf(registry.CodeInvalid, "%s %q must be a whole number from %d to %d", name, truncate(v, 100), lo, hi)
	}
	return n, nil
}

// adminListStuck lists stuck jobs (registry.StuckJobQueries), newest first, in
// one page: stuck jobs are what on-call reads, never a long list.
func (s *Server) adminListStuck(c *call, p registry.JobListParams, limit int) error {
	p.Limit = limit
	jobs, err := s.reg.ListStuckJobs(c.ctx, p)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, list[registry.Job]{Items: jobs})
}

// splitList flattens repeated and comma-separated query values.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// submitBody is a job submission.
type submitBody struct {
	Cluster        string           `json:"cluster"`
	Kind           registry.JobKind `json:"kind"`
	Payload        json.RawMessage  `json:"payload"`
	IdempotencyKey string           `json:"idempotencyKey"`
	ExpiresIn      string           `json:"expiresIn"`
}

// adminSubmitJob queues a job: 202 with the job at once, or with ?wait=N
// 200 with the job once it has ended (202 with it as it stands if N seconds
// pass first). A producer retrying a submission sends the same idempotency
// key and gets the job it made back (Idempotent-Replayed: true), answered as
// any job is: 202 while it is open, 200 once it has ended.
func (s *Server) adminSubmitJob(c *call) error {
	wait, err := waitParam(c.r.URL.Query())
	if err != nil {
		return err
	}
	var b submitBody
	if err := decodeAdmin(c, &b, true); err != nil {
		return err
	}
	if h := strings.TrimSpace(c.r.Header.Get("Idempotency-Key")); h != "" {
		if b.IdempotencyKey != "" && b.IdempotencyKey != h {
			return errf(registry.CodeInvalid, "the Idempotency-Key header %q and the body's idempotencyKey %q differ; send one, or the same in both", truncate(h, 100), truncate(b.IdempotencyKey, 100))
		}
		b.IdempotencyKey = h
	}
	switch {
	case strings.TrimSpace(b.Cluster) == "":
		return errf(registry.CodeInvalid, "field cluster is required: the id or name of the cluster to run the job")
	case b.Kind == "":
		return errf(registry.CodeInvalid, "field kind is required: apply, delete or intent")
	}
	expires, err := parseDurationField("expiresIn", b.ExpiresIn)
	if err != nil {
		return err
	}
	j, created, err := s.reg.SubmitJob(c.ctx, registry.JobSubmission{
		ClusterID: b.Cluster, Kind: b.Kind, Payload: b.Payload, IdempotencyKey: b.IdempotencyKey, ExpiresIn: expires,
		Traceparent: c.traceparent(),
	})
	if err != nil {
		return err
	}
	if c.span != nil {
		c.span.SetAttributes(attribute.String("tether.job.id", j.ID), attribute.String("tether.cluster.id", j.ClusterID))
	}
	if !created {
		c.w.Header().Set("Idempotent-Replayed", "true")
	}
	c.w.Header().Set("Location", adminPrefix+"/jobs/"+j.ID)
	return s.answerJob(c, j, wait, false)
}

func (s *Server) adminGetJob(c *call) error {
	wait, err := waitParam(c.r.URL.Query())
	if err != nil {
		return err
	}
	show, err := showPayloadParam(c.r.URL.Query())
	if err != nil {
		return err
	}
	get := s.reg.GetJob
	if show {
		get = s.reg.ShowJobPayload // a sealed payload is opened, and the viewing audited
	}
	j, err := get(c.ctx, c.params["id"])
	if err != nil {
		return err
	}
	if show && j.PayloadSealed {
		wait = 0 // the answer is this read, opened once; waiting would read it again sealed
	}
	return s.answerJob(c, j, wait, true)
}

// showPayloadParam reads ?showPayload=true|false.
func showPayloadParam(q map[string][]string) (bool, error) {
	v := q["showPayload"]
	if len(v) == 0 || v[0] == "" || v[0] == "false" {
		return false, nil
	}
	if v[0] == "true" {
		return true, nil
	}
	return false, errf(registry.CodeInvalid, "query parameter showPayload %q must be true or false", truncate(v[0], 32))
}

// jobDetail is a job with its timeline.
type jobDetail struct {
	*registry.Job
	Timeline []registry.JobHistoryEntry `json:"timeline,omitempty"`
}

// answerJob writes a job, after waiting up to wait for it to end: 200 when
// it has ended (or nobody waited on a read), 202 while it is still open.
//
// A token holding MaxWaitsPerAdminToken waits already is not held again: a
// read is answered 429 too_many_polls, and a submission, whose job is
// queued by now, 202 with the job at once; both with Retry-After.
func (s *Server) answerJob(c *call, j *registry.Job, wait time.Duration, detail bool) error {
	if wait > 0 && !j.State.Terminal() {
		if !s.waits.acquire(c.actor) {
			c.w.Header().Set("Retry-After", fmt.Sprint(retryAfterSeconds(waitsRetryAfter)))
			if detail {
				return errf(CodeTooManyPolls, "%s already holds %d requests waiting with ?wait=, the most one admin token may hold at once; let one end or wait in fewer places; retry after %d s",
					c.actor, MaxWaitsPerAdminToken, retryAfterSeconds(waitsRetryAfter))
			}
			wait = 0
		}
	}
	if wait > 0 && !j.State.Terminal() {
		defer s.waits.release(c.actor)
		s.metrics.adminWaits.Inc()
		defer s.metrics.adminWaits.Dec()
		waited, cancel := context.WithTimeout(c.ctx, wait)
		defer cancel()
		// The wait also ends once the token stops working (revoked by
		// anyone, on any replica, or expired): its holder is then answered
		// 401 at once, not when the wait runs out.
		ctx, release := s.reg.WhileAdminTokenWorks(waited, bearerOf(c.r))
		defer release()
		go func() {
			select {
			case <-s.draining: // shutting down: answer now with the job as it is
				cancel()
			case <-ctx.Done():
			}
		}()
		done, err := s.reg.WaitJob(ctx, j.ID)
		switch {
		case err == nil:
			j = done
		case registry.ErrorCode(context.Cause(ctx)) == registry.CodeUnauthorized:
			return context.Cause(ctx)
		case ctx.Err() != nil && c.r.Context().Err() == nil:
			if cur, err := s.reg.GetJob(c.ctx, j.ID); err == nil {
				j = cur
			}
		default:
			return err
		}
		// The job may have ended as the token stopped working: its outcome
		// is no longer the token's to read.
		if err := s.tokenStillWorks(c); err != nil {
			return err
		}
	}
	status := http.StatusOK
	if !j.State.Terminal() && (wait > 0 || !detail) {
		status = http.StatusAccepted
	}
	out := jobDetail{Job: j}
	if detail {
		h, err := s.reg.JobHistory(c.ctx, j.ID)
		if err != nil {
			return err
		}
		out.Timeline = h
	}
	return writeJSON(c.w, status, out)
}

func waitParam(q map[string][]string) (time.Duration, error) {
	v := ""
	if w := q["wait"]; len(w) > 0 {
		v = w[0]
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || time.Duration(n)*time.Second > MaxAdminWait {
		return 0, errf(registry.CodeInvalid, "wait %q must be a whole number of seconds from 0 to %d", v, int(MaxAdminWait/time.Second))
	}
	return time.Duration(n) * time.Second, nil
}

// adminRequeueJob takes {"reason", "extendExpiry", "attempt"}: a duration
// such as 1h moves the expiry of a job that would expire at once when
// requeued; an attempt (as the caller saw the job) is refused with a 409
// once the job is at another one.
func (s *Server) adminRequeueJob(c *call) error {
	var b struct {
		Reason       string `json:"reason"`
		ExtendExpiry string `json:"extendExpiry"`
		Attempt      int    `json:"attempt"`
	}
	if err := decodeAdmin(c, &b, false); err != nil {
		return err
	}
	by, err := parseDurationField("extendExpiry", b.ExtendExpiry)
	if err != nil {
		return err
	}
	j, err := s.reg.RequeueJobWith(c.ctx, c.params["id"], registry.RequeueOptions{Reason: b.Reason, ExtendExpiry: by, Attempt: b.Attempt})
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, j)
}

func (s *Server) adminCancelJob(c *call) error {
	return s.jobAction(c, s.reg.CancelJob)
}

// adminRetryJob answers the new job, 201.
func (s *Server) adminRetryJob(c *call) error {
	reason, err := readReason(c)
	if err != nil {
		return err
	}
	j, err := s.reg.RetryJob(c.ctx, c.params["id"], reason)
	if err != nil {
		return err
	}
	c.w.Header().Set("Location", adminPrefix+"/jobs/"+j.ID)
	return writeJSON(c.w, http.StatusCreated, j)
}

// adminDeleteJob deletes a finished job and answers it as it was. The
// reason comes as ?reason= (like a cluster's delete) or in a JSON body.
func (s *Server) adminDeleteJob(c *call) error {
	reason, err := queryOrBodyReason(c)
	if err != nil {
		return err
	}
	j, err := s.reg.DeleteJob(c.ctx, c.params["id"], reason)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, j)
}

func (s *Server) jobAction(c *call, act func(ctx context.Context, id, reason string) (*registry.Job, error)) error {
	reason, err := readReason(c)
	if err != nil {
		return err
	}
	j, err := act(c.ctx, c.params["id"], reason)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, j)
}

func (s *Server) adminExtendLease(c *call) error {
	var b struct {
		By string `json:"by"`
	}
	if err := decodeAdmin(c, &b, true); err != nil {
		return err
	}
	by, err := parseDurationField("by", b.By)
	if err != nil {
		return err
	}
	if by == 0 {
		return errf(registry.CodeInvalid, "field by is required: how much longer the lease runs, such as 10m")
	}
	j, err := s.reg.ExtendLease(c.ctx, c.params["id"], by)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, j)
}
