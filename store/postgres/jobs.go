package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

// jobRowCols are the columns of a job's row. Its lease is not one of them:
// it lives in the job's claim (job_claim, see claims.go).
const jobRowCols = `id, cluster_id, kind, intent, target_kind, target_namespace, target_name, payload, idempotency_key,
	state, attempt, created_at, updated_at, expires_at, submitted_by, claim_id, claimed_at, claimed_by, lease_seconds,
	last_activity_at, phase, outcome, error, result, finished_at, retry_of, payload_sealed, traceparent`

// jobCols are what scanJob reads of a job: its row's columns from rel (jobs,
// or a statement's relation of jobRowCols), then its claim's lease end and
// last heartbeat from c, the job's claim joined by withClaim (NULLs when it
// has none).
func jobCols(rel string) string {
	return qualified(rel+".", jobRowCols) + ", c.lease_expires_at, c.heard_at"
}

// withClaim is the FROM clause of a read of the jobs of rel (jobs, or a
// statement's relation of jobRowCols): each job with its claim, as c.
func withClaim(rel string) string {
	return " FROM " + rel + " LEFT JOIN job_claim c ON c.job_id = " + rel + ".id"
}

// scanJob scans jobCols, after lead's columns when lead is given.
func scanJob(row pgx.Row, lead ...any) (*registry.Job, error) {
	var j registry.Job
	var payload, result []byte
	var heard time.Time
	err := row.Scan(append(lead, &j.ID, &j.ClusterID, &j.Kind, &j.Intent, &j.Target.Kind, &j.Target.Namespace, &j.Target.Name,
		col.Bytes(&payload), &j.IdempotencyKey, &j.State, &j.Attempt, col.Time(&j.CreatedAt), col.Time(&j.UpdatedAt), col.Time(&j.ExpiresAt),
		&j.SubmittedBy, col.String(&j.ClaimID), col.Time(&j.ClaimedAt), col.String(&j.ClaimedBy), &j.LeaseSeconds,
		col.Time(&j.LastActivityAt), &j.Phase, &j.Outcome, &j.Error, col.Bytes(&result), col.Time(&j.FinishedAt), &j.RetryOf, &j.PayloadSealed,
		&j.Traceparent, col.Time(&j.LeaseExpiresAt), col.Time(&heard))...)
	if err != nil {
		return nil, err
	}
	// A lease's heartbeats write only the claim: the job was last heard
	// from at the later of its row's last activity and its last heartbeat.
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

func scanJobs(r pgx.Rows) (registry.Job, error) {
	j, err := scanJob(r)
	if err != nil {
		return registry.Job{}, err
	}
	return *j, nil
}

func (s *Store) JobGet(ctx context.Context, id string) (*registry.Job, error) {
	j, err := scanJob(s.queryRow(ctx, "SELECT "+jobCols("jobs")+withClaim("jobs")+" WHERE jobs.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "job %s does not exist", id)
	}
	if err != nil {
		return nil, s.wrap(err, "read a job")
	}
	return j, nil
}

// jobByID returns the job, or nil if it does not exist.
func jobByID(ctx context.Context, q db, id string) (*registry.Job, error) {
	j, err := scanJob(q.QueryRow(ctx, "SELECT "+jobCols("jobs")+withClaim("jobs")+" WHERE jobs.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return j, err
}

// historyFrom renders an INSERT of the history entry h for each row of the
// relation from, which supplies the job's id, attempt and state, for a
// data-modifying CTE.
func historyFrom(a *args, h *registry.JobHistoryEntry, from string) string {
	var conds any
	if len(h.Conditions) > 0 {
		conds = col.JSONText(h.Conditions)
	}
	return `INSERT INTO job_history (job_id, at, type, actor, attempt, state, phase, message, conditions, reported_at)
		SELECT ` + from + `.id, ` + a.add(col.MS(h.At)) + `::BIGINT, ` + a.add(string(h.Type)) + `::TEXT, ` + a.add(h.Actor) + `::TEXT, ` +
		from + `.attempt, ` + from + `.state, ` + a.add(h.Phase) + `::TEXT, ` + a.add(h.Message) + `::TEXT, ` +
		a.add(conds) + `::TEXT, ` + a.add(col.MS(h.ReportedAt)) + `::BIGINT FROM ` + from
}

// jobFilter renders p's filters as a WHERE clause; candidates are the ids
// that may hold the search words the trigram index serves
// (searchCandidates).
func jobFilter(a *args, p registry.JobListParams, candidates map[string][]string) string {
	var where []string
	if len(p.ClusterIDs) > 0 {
		where = append(where, "cluster_id IN ("+list(a, p.ClusterIDs)+")")
	}
	if len(p.ExceptClusterIDs) > 0 {
		where = append(where, "cluster_id NOT IN ("+list(a, p.ExceptClusterIDs)+")")
	}
	if len(p.States) > 0 {
		where = append(where, "state IN ("+list(a, states(p.States))+")")
	}
	if p.Kind != "" {
		where = append(where, "kind = "+a.add(string(p.Kind)))
	}
	if p.Error != "" {
		// error <> '' proves a generic plan may use the partial index of
		// the jobs with an error (migration 0027).
		where = append(where, "error = "+a.add(p.Error)+" AND error <> ''")
	}
	if p.RetryOf != "" {
		// retry_of <> '' proves a generic plan may use the partial index
		// of retries (a parameter's value is unknown to the planner).
		where = append(where, "retry_of = "+a.add(p.RetryOf)+" AND retry_of <> ''")
	}
	for _, word := range strings.Fields(p.Search) {
		// ILIKE: SQLite's LIKE ignores ASCII case. A word also matches the
		// jobs of the clusters whose name holds it (see the SQLite store).
		if ids, ok := candidates[word]; ok {
			where = append(where, "jobs.id = ANY("+a.add(ids)+"::TEXT[])")
		}
		pat := a.add(likePattern(word))
		where = append(where, `(id ILIKE `+pat+` ESCAPE '\' OR idempotency_key ILIKE `+pat+` ESCAPE '\' OR target_namespace ILIKE `+pat+
			` ESCAPE '\' OR target_name ILIKE `+pat+` ESCAPE '\' OR error ILIKE `+pat+` ESCAPE '\' OR kind ILIKE `+pat+
			` ESCAPE '\' OR cluster_id IN (SELECT id FROM clusters WHERE name ILIKE `+pat+` ESCAPE '\'))`)
	}
	// Leases are in the jobs' claims (see claims.go): the expired ones are
	// found through job_claim_lease, without reading the jobs that have none.
	if !p.LeaseExpiredBefore.IsZero() {
		where = append(where, "jobs.id IN (SELECT job_id FROM job_claim WHERE lease_expires_at < "+a.add(col.MS(p.LeaseExpiredBefore))+")")
	}
	if !p.LeaseLiveAt.IsZero() {
		where = append(where, "NOT EXISTS (SELECT 1 FROM job_claim WHERE job_id = jobs.id AND lease_expires_at < "+a.add(col.MS(p.LeaseLiveAt))+")")
	}
	if p.NoLease {
		where = append(where, "NOT EXISTS (SELECT 1 FROM job_claim WHERE job_id = jobs.id)")
	}
	if !p.ActivityBefore.IsZero() {
		// Only asked with NoLease: a job without a claim has no heartbeat
		// but its row's.
		where = append(where, "COALESCE(jobs.last_activity_at, jobs.created_at) < "+a.add(col.MS(p.ActivityBefore)))
	}
	if !p.FinishedAfter.IsZero() {
		where = append(where, "finished_at > "+a.add(col.MS(p.FinishedAfter)))
	}
	if c := p.After; c != nil {
		op := "<"
		if p.OldestFirst {
			op = ">"
		}
		at := a.add(col.MS(c.CreatedAt))
		where = append(where, "(created_at "+op+" "+at+" OR (created_at = "+at+" AND id "+op+" "+a.add(c.ID)+"))")
	}
	if len(where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(where, " AND ")
}

func states(ss []registry.JobState) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func (s *Store) JobList(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	candidates, err := s.searchCandidates(ctx, p)
	if err != nil {
		return nil, err
	}
	var a args
	where := jobFilter(&a, p, candidates)
	order := " ORDER BY created_at DESC, id DESC"
	if p.OldestFirst {
		order = " ORDER BY created_at, id"
	}
	limit := " LIMIT " + a.add(limitOr(p.Limit, 100)) + " OFFSET " + a.add(max(p.Offset, 0))
	rows, err := s.query(ctx, "read jobs", "SELECT "+jobCols("jobs")+withClaim("jobs")+where+order+limit, a...)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read jobs", scanJobs)
}

func (s *Store) JobCount(ctx context.Context, p registry.JobListParams) (int, error) {
	candidates, err := s.searchCandidates(ctx, p)
	if err != nil {
		return 0, err
	}
	var a args
	where := jobFilter(&a, p, candidates)
	var n int
	err = s.queryRow(ctx, "SELECT COUNT(*) FROM jobs"+where, a...).Scan(&n)
	return n, s.wrap(err, "count jobs")
}

// JobsDeliver hides what it hands out in the statement that picks it; the
// row locks it takes skip jobs a concurrent delivery is hiding right now.
// A delivery that hides nothing is a plain read.
func (s *Store) JobsDeliver(ctx context.Context, p registry.JobsDeliverParams) ([]registry.Job, error) {
	const visible = ` WHERE jobs.cluster_id = $1 AND jobs.state = 'queued' AND (jobs.expires_at IS NULL OR jobs.expires_at > $2)
		AND (jobs.visible_after IS NULL OR jobs.visible_after <= $2) ORDER BY jobs.created_at, jobs.id LIMIT $3`
	if p.HideUntil.IsZero() {
		rows, err := s.query(ctx, "read queued jobs", "SELECT "+jobCols("jobs")+withClaim("jobs")+visible, p.ClusterID, col.MS(p.Now), p.Limit)
		if err != nil {
			return nil, err
		}
		return collect(s, rows, "read queued jobs", scanJobs)
	}
	var out []registry.Job
	err := s.writePiped(ctx, "deliver queued jobs", &piped{
		sql: `WITH picked AS (SELECT jobs.id FROM jobs` + visible + ` FOR UPDATE SKIP LOCKED)
			UPDATE jobs SET visible_after = $4 FROM picked LEFT JOIN job_claim c ON c.job_id = picked.id
			WHERE jobs.id = picked.id RETURNING ` + jobCols("jobs"),
		args: []any{p.ClusterID, col.MS(p.Now), p.Limit, col.MS(p.HideUntil)},
		read: func(rows pgx.Rows, err error) error {
			if err != nil {
				return err
			}
			out, err = collect(s, rows, "deliver queued jobs", scanJobs)
			return err
		},
	}, nil)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b registry.Job) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (s *Store) JobsUnhide(ctx context.Context, p registry.JobsUnhideParams) error {
	if len(p.IDs) == 0 {
		return nil
	}
	return s.stmt(ctx, "unhide jobs", func(ctx context.Context, q db) error {
		_, err := q.Exec(ctx, `UPDATE jobs SET visible_after = NULL WHERE cluster_id = $1 AND state = 'queued' AND visible_after = $2
			AND id = ANY($3)`, p.ClusterID, col.MS(p.HiddenUntil), p.IDs)
		return err
	})
}

// qualified prefixes every column of a column list with a table name.
func qualified(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

func (s *Store) JobHistory(ctx context.Context, jobID string) ([]registry.JobHistoryEntry, error) {
	rows, err := s.query(ctx, "read a job's history", `SELECT seq, job_id, at, type, actor, attempt, state, phase, message, conditions, reported_at
		FROM job_history WHERE job_id = $1 ORDER BY seq`, jobID)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read a job's history", func(r pgx.Rows) (registry.JobHistoryEntry, error) {
		var h registry.JobHistoryEntry
		err := r.Scan(&h.Seq, &h.JobID, col.Time(&h.At), &h.Type, &h.Actor, &h.Attempt, &h.State, &h.Phase, &h.Message,
			col.JSON(&h.Conditions), col.Time(&h.ReportedAt))
		return h, err
	})
}

func (s *Store) JobCounts(ctx context.Context) ([]registry.JobCount, error) {
	// The counts and the deltas not folded yet (migration 0018), in one
	// snapshot: a fold moves deltas into job_counts in one transaction.
	rows, err := s.query(ctx, "read job counts", `SELECT cluster_id, state, sum(n)::BIGINT FROM (
			SELECT cluster_id, state, n FROM job_counts UNION ALL SELECT cluster_id, state, n FROM job_count_deltas) c
		GROUP BY cluster_id, state HAVING sum(n) > 0 ORDER BY cluster_id, state`)
	if err != nil {
		return nil, err
	}
	return collect(s, rows, "read job counts", func(r pgx.Rows) (registry.JobCount, error) {
		var c registry.JobCount
		err := r.Scan(&c.ClusterID, &c.State, &c.Count)
		return c, err
	})
}

// JobUpdate is one statement: UPDATE ... WHERE <conditions> RETURNING, with
// the history and audit entries inserted from what it returned (so only when
// it applied), and the job as it is when it did not apply.
func (s *Store) JobUpdate(ctx context.Context, p registry.JobUpdateParams) (*registry.Job, bool, error) {
	sql, a := updateJobSQL(p)
	return s.writeJobStatement(ctx, "update a job", p.ID, sql, a)
}

// writeJobStatement runs, through the writer's pipeline, a statement whose
// rows readUpdatedJob reads (updateJobSQL's or JobRenewLease's).
func (s *Store) writeJobStatement(ctx context.Context, doing, id, sql string, a []any) (*registry.Job, bool, error) {
	var out *registry.Job
	applied := false
	err := s.writePiped(ctx, doing, &piped{sql: sql, args: a, read: func(rows pgx.Rows, err error) error {
		out, applied, err = readUpdatedJob(rows, err, id)
		return err
	}}, nil)
	if err != nil {
		return nil, false, err
	}
	return out, applied, nil
}

// updateJob is JobUpdate's statement on q (a connection or a transaction).
func updateJob(ctx context.Context, q db, p registry.JobUpdateParams) (*registry.Job, bool, error) {
	sql, a := updateJobSQL(p)
	rows, err := q.Query(ctx, sql, a...)
	return readUpdatedJob(rows, err, p.ID)
}

// updateJobSQL is JobUpdate's statement. Its one row is (true, the job
// updated) when the update applied, (false, the job) when it did not; there
// is no row when there is no such job. What the update changes of the job's
// claim (see claims.go) is a CTE of the same statement, cw, that reads the
// job from the update's result: it changes the claim only if the update
// applied.
func updateJobSQL(p registry.JobUpdateParams) (string, []any) {
	var a args
	set := record.JobSet(&p.Set, a.add)
	claim := claimWrite(&a, &p.Set, "u")
	id := a.add(p.ID)
	where := " WHERE id = " + id
	if p.ClusterID != "" {
		where += " AND cluster_id = " + a.add(p.ClusterID)
	}
	if len(p.FromStates) > 0 {
		where += " AND state IN (" + list(&a, states(p.FromStates)) + ")"
	}
	if p.ClaimID != "" {
		where += " AND claim_id = " + a.add(p.ClaimID)
	}
	if !p.NotExpiredAt.IsZero() {
		where += " AND (expires_at IS NULL OR expires_at > " + a.add(col.MS(p.NotExpiredAt)) + ")"
	}
	if p.Leased {
		where += " AND EXISTS (SELECT 1 FROM job_claim WHERE job_id = jobs.id)"
	}
	if p.Error != "" {
		where += " AND error = " + a.add(p.Error)
	}
	if p.Attempt > 0 {
		where += " AND attempt = " + a.add(p.Attempt)
	}
	sql := "WITH u AS (UPDATE jobs SET " + set + where + " RETURNING " + jobRowCols + ")"
	// The updated job's claim: as the statement wrote it (a data-modifying
	// CTE's change is not part of the statement's snapshot, but its RETURNING
	// is), or as it was when the statement leaves it alone.
	claimed := withClaim("u")
	if claim != "" {
		sql += ", cw AS (" + claim + ")"
		claimed = " FROM u LEFT JOIN cw c ON c.job_id = u.id"
	}
	if p.History != nil {
		sql += ", h AS (" + historyFrom(&a, p.History, "u") + ")"
	}
	if p.Audit != nil {
		sql += ", a AS (" + auditFrom(&a, *p.Audit, "u", "u.cluster_id") + ")"
	}
	cur, branch := asItStands(id, "u")
	sql += ", " + cur + " SELECT true, " + jobCols("u") + claimed + branch
	return sql, a
}

// asItStands is, for a statement whose CTE applied returns the job when the
// statement changed it, a CTE and a last UNION ALL branch that return (false,
// the job) when it did not. The job is read with a lock, so that it is the
// job as it stands, not as the statement's snapshot had it: writes run beside
// each other (see writer.go), and a job deleted or changed by a write that
// committed while this statement waited for its row is read as that write
// left it (a deleted job reads as no job). The lock is FOR SHARE, not the
// weaker FOR KEY SHARE: that one does not conflict with an update of the
// job's other columns, and reads the snapshot's version past it.
func asItStands(id, applied string) (cte, branch string) {
	cte = "cur AS (SELECT " + jobRowCols + " FROM jobs WHERE id = " + id + " AND NOT EXISTS (SELECT 1 FROM " + applied + ") FOR SHARE)"
	branch = " UNION ALL SELECT false, " + jobCols("cur") + withClaim("cur")
	return cte, branch
}

// readUpdatedJob reads updateJobSQL's rows.
func readUpdatedJob(rows pgx.Rows, err error, id string) (*registry.Job, bool, error) {
	if err != nil {
		return nil, false, updateError(err, id)
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, false, updateError(rows.Err(), id)
	}
	var applied bool
	j, err := scanJob(rows, &applied)
	if err != nil {
		return nil, false, err
	}
	rows.Close()
	if err := updateError(rows.Err(), id); err != nil {
		return nil, false, err
	}
	return j, applied, nil
}

func updateError(err error, id string) error {
	if isUniqueViolation(err, "jobs_idempotency") {
		return registry.Errorf(registry.CodeConflict, "job %s cannot reopen: another open job of its cluster has the same idempotency key", id)
	}
	return err
}
