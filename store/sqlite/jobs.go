package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

// jobCols are a job as read: its row, then its lease and the last lease
// heartbeat from its claim (job_claim, migration 0017). The claim's columns
// are subqueries so that the same list serves SELECT ... FROM jobs and
// RETURNING alike.
const jobCols = `id, cluster_id, kind, intent, target_kind, target_namespace, target_name, payload, idempotency_key,
	state, attempt, created_at, updated_at, expires_at, submitted_by, claim_id, claimed_at, claimed_by, lease_seconds,
	last_activity_at, phase, outcome, error, result, finished_at, retry_of, payload_sealed, traceparent, ` + claimCols

const claimCols = `(SELECT lease_expires_at FROM job_claim WHERE job_id = jobs.id), (SELECT heard_at FROM job_claim WHERE job_id = jobs.id)`

// jobKeyCols are what an agent's update needs back (JobUpdateParams.FullJob):
// the claim, and the times and trace context the server's metrics and traces
// read.
const jobKeyCols = `id, cluster_id, kind, state, attempt, claim_id, (SELECT lease_expires_at FROM job_claim WHERE job_id = jobs.id), updated_at,
	created_at, claimed_at, traceparent`

func scanJob(row scanner) (*registry.Job, error) {
	var j registry.Job
	var payload, result []byte
	var heard time.Time
	err := row.Scan(&j.ID, &j.ClusterID, &j.Kind, &j.Intent, &j.Target.Kind, &j.Target.Namespace, &j.Target.Name,
		col.Bytes(&payload), &j.IdempotencyKey, &j.State, &j.Attempt, col.Time(&j.CreatedAt), col.Time(&j.UpdatedAt), col.Time(&j.ExpiresAt),
		&j.SubmittedBy, col.String(&j.ClaimID), col.Time(&j.ClaimedAt), col.String(&j.ClaimedBy), &j.LeaseSeconds,
		col.Time(&j.LastActivityAt), &j.Phase, &j.Outcome, &j.Error, col.Bytes(&result), col.Time(&j.FinishedAt), &j.RetryOf, &j.PayloadSealed,
		&j.Traceparent, col.Time(&j.LeaseExpiresAt), col.Time(&heard))
	if err != nil {
		return nil, err
	}
	// A lease heartbeat is activity too: it is kept on the claim, not the job.
	if heard.After(j.LastActivityAt) {
		j.LastActivityAt = heard
	}
	if j.PayloadSealed {
		j.SealedPayload = payload // withheld: the registry opens it on request
	} else {
		j.Payload = json.RawMessage(payload)
	}
	if len(result) > 0 {
		j.Result = json.RawMessage(result)
	}
	return &j, nil
}

func (s *Store) JobGet(ctx context.Context, id string) (*registry.Job, error) {
	j, err := scanJob(s.queryRow(ctx, "SELECT "+jobCols+" FROM jobs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "job %s does not exist", id)
	}
	return j, s.wrap(err, "read a job")
}

func (t *txn) jobByID(id string) (*registry.Job, error) {
	j, err := scanJob(t.selectRow("SELECT "+jobCols+" FROM jobs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return j, t.s.wrap(err, "read a job")
}

func (s *Store) JobInsert(ctx context.Context, p registry.JobInsertParams) (*registry.Job, bool, error) {
	var out *registry.Job
	created := false
	err := s.write(ctx, func(t *txn) error {
		var err error
		out, created, err = t.insertJob(p) // a batch may run its requests twice (see commit): set both every time
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// insertJob is JobInsert inside a transaction. The writer runs one
// transaction at a time, so what it reads of the key holds until it writes;
// it reads before it writes, so that a refusal leaves nothing to undo (see
// commit).
func (t *txn) insertJob(p registry.JobInsertParams) (*registry.Job, bool, error) {
	j := &p.Job
	if j.IdempotencyKey != "" {
		held, err := t.keyHolder(p)
		if err != nil || held != nil {
			return held, false, err
		}
	}
	res, err := t.exec(`INSERT INTO jobs (id, cluster_id, kind, intent, target_kind, target_namespace, target_name, payload, payload_sealed,
		idempotency_key, state, attempt, created_at, updated_at, expires_at, submitted_by, retry_of, traceparent)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (cluster_id, idempotency_key) WHERE idempotency_key != '' AND state IN ('queued', 'in_progress') DO NOTHING`,
		j.ID, j.ClusterID, j.Kind, j.Intent, j.Target.Kind, j.Target.Namespace, j.Target.Name, record.StoredPayload(j), j.PayloadSealed,
		j.IdempotencyKey, j.State, j.Attempt, col.MS(j.CreatedAt), col.MS(j.UpdatedAt), col.MS(j.ExpiresAt), j.SubmittedBy, j.RetryOf, j.Traceparent)
	if isForeignKeyViolation(err) {
		return nil, false, registry.Errorf(registry.CodeNotFound, "cluster %s does not exist", j.ClusterID)
	}
	if err != nil {
		return nil, false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		existing, err := scanJob(t.selectRow("SELECT "+jobCols+` FROM jobs WHERE cluster_id = ? AND idempotency_key = ?
			AND state IN ('queued', 'in_progress')`, j.ClusterID, j.IdempotencyKey))
		if err != nil {
			return nil, false, t.s.wrap(err, "read the job with the same idempotency key")
		}
		return existing, false, nil
	}
	t.queueSearch(j.ID)
	h := p.History
	h.JobID, h.Attempt, h.State = j.ID, j.Attempt, j.State
	if err := t.history(&h); err != nil {
		return nil, false, err
	}
	if err := t.audit(p.Audit); err != nil {
		return nil, false, err
	}
	if j.IdempotencyKey != "" && !p.KeyUntil.IsZero() {
		if _, err := t.exec(`INSERT INTO idempotency_keys (cluster_id, key, job_id, expires_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (cluster_id, key) DO UPDATE SET job_id = excluded.job_id, expires_at = excluded.expires_at`,
			j.ClusterID, j.IdempotencyKey, j.ID, col.MS(p.KeyUntil)); err != nil {
			return nil, false, err
		}
	}
	return j, true, nil
}

// keyHolder is the job that p's idempotency key answers, or nil: an open job
// of the cluster with the key (found through jobs_idempotency, whose terms
// the query repeats so that SQLite uses it), else the job the key was given
// to while the key lasts.
func (t *txn) keyHolder(p registry.JobInsertParams) (*registry.Job, error) {
	j := &p.Job
	open, err := scanJob(t.selectRow("SELECT "+jobCols+` FROM jobs WHERE cluster_id = ? AND idempotency_key = ?
		AND idempotency_key != '' AND state IN ('queued', 'in_progress')`, j.ClusterID, j.IdempotencyKey))
	if !errors.Is(err, sql.ErrNoRows) {
		return open, t.s.wrap(err, "read the open job with the same idempotency key")
	}
	if p.KeyUntil.IsZero() || p.TakeKey {
		return nil, nil
	}
	var id string
	var until time.Time
	err = t.selectRow(`SELECT job_id, expires_at FROM idempotency_keys WHERE cluster_id = ? AND key = ? AND expires_at > ?`,
		j.ClusterID, j.IdempotencyKey, col.MS(j.CreatedAt)).Scan(&id, col.Time(&until))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, t.s.wrap(err, "read the idempotency key")
	}
	held, err := t.jobByID(id)
	if err == nil && held == nil {
		err = registry.KeyOfDeletedJob(j.IdempotencyKey, id, until)
	}
	return held, err
}

func (t *txn) history(h *registry.JobHistoryEntry) error {
	var conds any
	if len(h.Conditions) > 0 {
		conds = col.JSONText(h.Conditions)
	}
	_, err := t.exec(`INSERT INTO job_history (job_id, at, type, actor, attempt, state, phase, message, conditions, reported_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		h.JobID, col.MS(h.At), h.Type, h.Actor, h.Attempt, h.State, h.Phase, h.Message, conds, col.MS(h.ReportedAt))
	return err
}

// jobFilter renders p's filters as a WHERE clause; indexed are the search
// words the trigram index serves (indexedWords).
func jobFilter(p registry.JobListParams, indexed map[string]bool) (string, []any) {
	var where []string
	var args []any
	if len(p.ClusterIDs) > 0 {
		where = append(where, "cluster_id IN ("+placeholders(len(p.ClusterIDs))+")")
		for _, id := range p.ClusterIDs {
			args = append(args, id)
		}
	}
	if len(p.ExceptClusterIDs) > 0 {
		where = append(where, "cluster_id NOT IN ("+placeholders(len(p.ExceptClusterIDs))+")")
		for _, id := range p.ExceptClusterIDs {
			args = append(args, id)
		}
	}
	if len(p.States) > 0 {
		where = append(where, "state IN ("+placeholders(len(p.States))+")")
		for _, st := range p.States {
			args = append(args, st)
		}
	}
	if p.Kind != "" {
		where = append(where, "kind = ?")
		args = append(args, p.Kind)
	}
	if p.Error != "" {
		// error <> '' lets SQLite use the partial index of the jobs with an
		// error (migration 0027).
		where = append(where, "error = ? AND error <> ''")
		args = append(args, p.Error)
	}
	if p.RetryOf != "" {
		// retry_of <> '' lets SQLite use the partial index of retries.
		where = append(where, "retry_of = ? AND retry_of <> ''")
		args = append(args, p.RetryOf)
	}
	for _, word := range strings.Fields(p.Search) {
		cond, wargs := wordFilter(word, indexed[word])
		where = append(where, cond)
		args = append(args, wargs...)
	}
	if !p.LeaseExpiredBefore.IsZero() {
		where = append(where, "id IN (SELECT job_id FROM job_claim WHERE lease_expires_at < ?)")
		args = append(args, col.MS(p.LeaseExpiredBefore))
	}
	if !p.LeaseLiveAt.IsZero() {
		where = append(where, "id NOT IN (SELECT job_id FROM job_claim WHERE lease_expires_at < ?)")
		args = append(args, col.MS(p.LeaseLiveAt))
	}
	if p.NoLease {
		where = append(where, "NOT EXISTS (SELECT 1 FROM job_claim WHERE job_id = jobs.id)")
	}
	if !p.ActivityBefore.IsZero() {
		where = append(where, "COALESCE(last_activity_at, created_at) < ?")
		args = append(args, col.MS(p.ActivityBefore))
	}
	if !p.FinishedAfter.IsZero() {
		where = append(where, "finished_at > ?")
		args = append(args, col.MS(p.FinishedAfter))
	}
	if c := p.After; c != nil {
		op := "<"
		if p.OldestFirst {
			op = ">"
		}
		where = append(where, "(created_at "+op+" ? OR (created_at = ? AND id "+op+" ?))")
		args = append(args, col.MS(c.CreatedAt), col.MS(c.CreatedAt), c.ID)
	}
	if len(where) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(where, " AND "), args
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func (s *Store) JobList(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	indexed, err := s.indexedWords(ctx, p)
	if err != nil {
		return nil, err
	}
	where, args := jobFilter(p, indexed)
	order := " ORDER BY created_at DESC, id DESC"
	if p.OldestFirst {
		order = " ORDER BY created_at, id"
	}
	args = append(args, limitOr(p.Limit, 100), max(p.Offset, 0))
	rows, err := s.query(ctx, "SELECT "+jobCols+" FROM jobs"+where+order+" LIMIT ? OFFSET ?", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return s.collectJobs(rows)
}

func (s *Store) collectJobs(rows *sql.Rows) ([]registry.Job, error) {
	out := []registry.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, s.wrap(err, "read jobs")
		}
		out = append(out, *j)
	}
	return out, s.wrap(rows.Err(), "read jobs")
}

func (s *Store) JobCount(ctx context.Context, p registry.JobListParams) (int, error) {
	indexed, err := s.indexedWords(ctx, p)
	if err != nil {
		return 0, err
	}
	where, args := jobFilter(p, indexed)
	var n int
	err = s.queryRow(ctx, "SELECT COUNT(*) FROM jobs"+where, args...).Scan(&n)
	return n, s.wrap(err, "count jobs")
}

// JobsDeliver is one statement: SQLite's single writer makes it atomic. A
// delivery that hides nothing is a plain read.
func (s *Store) JobsDeliver(ctx context.Context, p registry.JobsDeliverParams) ([]registry.Job, error) {
	const visible = ` FROM jobs WHERE cluster_id = ? AND state = 'queued' AND (expires_at IS NULL OR expires_at > ?)
		AND (visible_after IS NULL OR visible_after <= ?) ORDER BY created_at, id LIMIT ?`
	args := []any{p.ClusterID, col.MS(p.Now), col.MS(p.Now), p.Limit}
	if p.HideUntil.IsZero() {
		rows, err := s.query(ctx, "SELECT "+jobCols+visible, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		return s.collectJobs(rows)
	}
	var out []registry.Job
	err := s.write(ctx, func(t *txn) error {
		out = nil
		rows, err := t.query(`UPDATE jobs SET visible_after = ? WHERE id IN (SELECT id`+visible+`) RETURNING `+jobCols,
			append([]any{col.MS(p.HideUntil)}, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				return err
			}
			out = append(out, *j)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	// RETURNING gives no order: a poll hands out the oldest first.
	slices.SortFunc(out, func(a, b registry.Job) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (s *Store) JobsUnhide(ctx context.Context, p registry.JobsUnhideParams) error {
	if len(p.IDs) == 0 {
		return nil
	}
	args := []any{p.ClusterID, col.MS(p.HiddenUntil)}
	for _, id := range p.IDs {
		args = append(args, id)
	}
	return s.write(ctx, func(t *txn) error {
		_, err := t.exec(`UPDATE jobs SET visible_after = NULL WHERE cluster_id = ? AND state = 'queued' AND visible_after = ?
			AND id IN (`+placeholders(len(p.IDs))+`)`, args...)
		return err
	})
}

func (s *Store) JobHistory(ctx context.Context, jobID string) ([]registry.JobHistoryEntry, error) {
	rows, err := s.query(ctx, `SELECT seq, job_id, at, type, actor, attempt, state, phase, message, conditions, reported_at
		FROM job_history WHERE job_id = ? ORDER BY seq`, jobID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.JobHistoryEntry{}
	for rows.Next() {
		var h registry.JobHistoryEntry
		if err := rows.Scan(&h.Seq, &h.JobID, col.Time(&h.At), &h.Type, &h.Actor, &h.Attempt, &h.State, &h.Phase, &h.Message,
			col.JSON(&h.Conditions), col.Time(&h.ReportedAt)); err != nil {
			return nil, s.wrap(err, "read a job's history")
		}
		out = append(out, h)
	}
	return out, s.wrap(rows.Err(), "read a job's history")
}

func (s *Store) JobCounts(ctx context.Context) ([]registry.JobCount, error) {
	rows, err := s.query(ctx, "SELECT cluster_id, state, n FROM job_counts WHERE n > 0 ORDER BY cluster_id, state")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []registry.JobCount{}
	var state sql.RawBytes
	for rows.Next() {
		var c registry.JobCount
		if err := rows.Scan(&c.ClusterID, &state, &c.Count); err != nil {
			return nil, s.wrap(err, "read job counts")
		}
		// A fleet's counts are a row per cluster and state (50,000
		// clusters: 55,000 rows): the state is one of a few, not a new
		// string each.
		c.State = knownState(state)
		out = append(out, c)
	}
	return out, s.wrap(rows.Err(), "read job counts")
}

// knownState is b as a JobState, the registry's own value when it is one.
func knownState(b []byte) registry.JobState {
	for _, st := range registry.JobStates {
		if string(st) == string(b) {
			return st
		}
	}
	return registry.JobState(b)
}

func (s *Store) JobUpdate(ctx context.Context, p registry.JobUpdateParams) (*registry.Job, bool, error) {
	var out *registry.Job
	applied := false
	err := s.write(ctx, func(t *txn) error {
		var err error
		out, applied, err = t.updateJob(p) // a batch may run its requests twice (see commit): set both every time
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, applied, nil
}

// updateJob is JobUpdate inside a transaction.
func (t *txn) updateJob(p registry.JobUpdateParams) (*registry.Job, bool, error) {
	var args []any
	set := record.JobSet(&p.Set, func(v any) string { args = append(args, v); return "?" })
	where := " WHERE id = ?"
	args = append(args, p.ID)
	if p.ClusterID != "" {
		where += " AND cluster_id = ?"
		args = append(args, p.ClusterID)
	}
	if len(p.FromStates) > 0 {
		where += " AND state IN (" + placeholders(len(p.FromStates)) + ")"
		for _, st := range p.FromStates {
			args = append(args, st)
		}
	}
	if p.ClaimID != "" {
		where += " AND claim_id = ?"
		args = append(args, p.ClaimID)
	}
	if !p.NotExpiredAt.IsZero() {
		where += " AND (expires_at IS NULL OR expires_at > ?)"
		args = append(args, col.MS(p.NotExpiredAt))
	}
	if p.Leased {
		where += " AND EXISTS (SELECT 1 FROM job_claim WHERE job_id = jobs.id)"
	}
	if p.Error != "" {
		where += " AND error = ?"
		args = append(args, p.Error)
	}
	if p.Attempt > 0 {
		where += " AND attempt = ?"
		args = append(args, p.Attempt)
	}
	if err := t.indexSearchOf(p.ID); err != nil {
		return nil, false, err
	}
	var j *registry.Job
	var err error
	if p.FullJob {
		j, err = scanJob(t.queryRow("UPDATE jobs SET "+set+where+" RETURNING "+jobCols, args...))
	} else {
		j = &registry.Job{}
		err = t.queryRow("UPDATE jobs SET "+set+where+" RETURNING "+jobKeyCols, args...).Scan(
			&j.ID, &j.ClusterID, &j.Kind, &j.State, &j.Attempt, col.String(&j.ClaimID), col.Time(&j.LeaseExpiresAt), col.Time(&j.UpdatedAt),
			col.Time(&j.CreatedAt), col.Time(&j.ClaimedAt), &j.Traceparent)
	}
	if errors.Is(err, sql.ErrNoRows) {
		cur, err := t.jobByID(p.ID)
		return cur, false, err
	}
	if isUniqueViolation(err) {
		// Reopening a job whose idempotency key another open job now has.
		return nil, false, registry.Errorf(registry.CodeConflict, "job %s cannot be reopened: another open job of its cluster has the same idempotency key", p.ID)
	}
	if err != nil {
		return nil, false, t.s.wrap(err, "update a job")
	}
	if changed, err := t.writeClaim(j, &p.Set); err != nil {
		return nil, false, err
	} else if changed && p.FullJob {
		// The claim's last heartbeat may have gone with it: read the job
		// as it now reads (admins' updates only; agents ask for key fields).
		if j, err = t.jobByID(p.ID); err != nil {
			return nil, false, err
		}
	}
	if p.History != nil {
		h := *p.History
		h.JobID, h.Attempt, h.State = j.ID, j.Attempt, j.State
		if err := t.history(&h); err != nil {
			return nil, false, err
		}
	}
	if p.Audit != nil {
		a := *p.Audit
		a.ClusterID = j.ClusterID
		if err := t.audit(a); err != nil {
			return nil, false, err
		}
	}
	return j, true, nil
}

// reclaimed is one row the reaper changed, as RETURNING reports it.
type reclaimed struct {
	ID        string `json:"id"`
	ClusterID string `json:"cluster"`
	State     string `json:"state"`
	Attempt   int    `json:"attempt"`
}
