package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

// JobInsert is one statement: the job, its history and its audit entry, unless
// an open job of the cluster holds the idempotency key, and then that job. A
// concurrent insert with the same key waits on the unique index for the other
// to commit; its snapshot predates that job, so it takes its slow path,
// which runs the statement again and finds it.
func (s *Store) JobInsert(ctx context.Context, p registry.JobInsertParams) (*registry.Job, bool, error) {
	var out *registry.Job
	created := false
	sql, a := insertJobSQL(p)
	stmt := &piped{sql: sql, args: a, read: func(rows pgx.Rows, err error) error {
		out, created, err = readInsertedJob(rows, err, &p)
		return err
	}}
	err := s.writePiped(ctx, "submit a job", stmt, func(ctx context.Context, q db) error {
		var err error
		out, created, err = insertJob(ctx, q, p)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// insertJobSQL is JobInsert's statement. Its one row is (true, the job) when
// it inserted the job, (false, the job the key answers) when the key
// answered one; no row when the statement could not tell (see
// insertKeyedJobSQL), or when the open job that held the key ended before the
// statement could read it.
func insertJobSQL(p registry.JobInsertParams) (string, []any) {
	j := &p.Job
	if j.IdempotencyKey != "" && !p.KeyUntil.IsZero() {
		return insertKeyedJobSQL(p)
	}
	var a args
	values := list(&a, jobInsertValues(j))
	h := p.History
	sql := `WITH j AS (INSERT INTO jobs (` + jobInsertCols + `)
			VALUES (` + values + `)
			ON CONFLICT (cluster_id, idempotency_key) WHERE idempotency_key <> '' AND state IN ('queued', 'in_progress') DO NOTHING
			RETURNING ` + jobRowCols + `),
		h AS (` + historyFrom(&a, &h, "j") + `),
		a AS (` + auditFrom(&a, p.Audit, "j", "") + `)
		SELECT true, ` + qualified("j.", jobRowCols) + `, NULL::BIGINT, NULL::BIGINT FROM j -- a new job has no claim
		UNION ALL
		SELECT false, ` + jobCols("jobs") + withClaim("jobs") + ` WHERE jobs.cluster_id = ` + a.add(j.ClusterID) + `
			AND jobs.idempotency_key = ` + a.add(j.IdempotencyKey) + `
			AND jobs.idempotency_key <> '' AND jobs.state IN ('queued', 'in_progress') AND NOT EXISTS (SELECT 1 FROM j)`
	return sql, a
}

const jobInsertCols = `id, cluster_id, kind, intent, target_kind, target_namespace, target_name, payload, payload_sealed,
	idempotency_key, state, attempt, created_at, updated_at, expires_at, submitted_by, retry_of, traceparent`

// jobInsertTypes are the types of jobInsertCols: an INSERT ... SELECT does
// not give its parameters the columns' types, as VALUES does.
var jobInsertTypes = []string{"TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "TEXT", "BYTEA", "BOOLEAN",
	"TEXT", "TEXT", "INTEGER", "BIGINT", "BIGINT", "BIGINT", "TEXT", "TEXT", "TEXT"}

func jobInsertValues(j *registry.Job) []any {
	return []any{j.ID, j.ClusterID, string(j.Kind), j.Intent, j.Target.Kind, j.Target.Namespace, j.Target.Name, record.StoredPayload(j), j.PayloadSealed,
		j.IdempotencyKey, string(j.State), j.Attempt, col.MS(j.CreatedAt), col.MS(j.UpdatedAt), col.MS(j.ExpiresAt), j.SubmittedBy, j.RetryOf, j.Traceparent}
}

// insertKeyedJobSQL is insertJobSQL for a job whose key outlives it
// (KeyUntil). Unless an open job holds the key (o), the statement writes the
// key's row first, as an upsert that always writes it: it waits there for a
// concurrent insert with the key, of any replica, to commit, and its
// RETURNING is the row as it is then, newer than the statement's snapshot:
// the job the key answers, this one only if the key was free (or expired,
// or taken: TakeKey). Only then is the job inserted. When the key answers a
// job the statement cannot see (committed after it began, or deleted since),
// or an open job with the key appeared meanwhile, it answers no row, and
// insertJob runs it again.
func insertKeyedJobSQL(p registry.JobInsertParams) (string, []any) {
	j := &p.Job
	var a args
	values := jobInsertValues(j)
	typed := make([]string, len(values))
	for i, v := range values {
		typed[i] = a.add(v) + "::" + jobInsertTypes[i]
	}
	cluster, key, id := typed[1], typed[9], typed[0]
	free := `ik.expires_at <= ` + a.add(col.MS(j.CreatedAt)) + `::BIGINT OR ` + a.add(p.TakeKey) + `::BOOLEAN`
	h := p.History
	sql := `WITH o AS (SELECT id FROM jobs WHERE cluster_id = ` + cluster + ` AND idempotency_key = ` + key + `
			AND idempotency_key <> '' AND state IN ('queued', 'in_progress')),
		k AS (INSERT INTO idempotency_keys AS ik (cluster_id, key, job_id, expires_at)
			SELECT ` + cluster + `, ` + key + `, ` + id + `, ` + a.add(col.MS(p.KeyUntil)) + `::BIGINT WHERE NOT EXISTS (SELECT 1 FROM o)
			ON CONFLICT (cluster_id, key) DO UPDATE SET
				job_id = CASE WHEN ` + free + ` THEN excluded.job_id ELSE ik.job_id END,
				expires_at = CASE WHEN ` + free + ` THEN excluded.expires_at ELSE ik.expires_at END
			RETURNING job_id),
		j AS (INSERT INTO jobs (` + jobInsertCols + `)
			SELECT ` + strings.Join(typed, ", ") + ` WHERE EXISTS (SELECT 1 FROM k WHERE k.job_id = ` + id + `)
			ON CONFLICT (cluster_id, idempotency_key) WHERE idempotency_key <> '' AND state IN ('queued', 'in_progress') DO NOTHING
			RETURNING ` + jobRowCols + `),
		h AS (` + historyFrom(&a, &h, "j") + `),
		a AS (` + auditFrom(&a, p.Audit, "j", "") + `)
		SELECT true, ` + qualified("j.", jobRowCols) + `, NULL::BIGINT, NULL::BIGINT FROM j -- a new job has no claim
		UNION ALL
		SELECT false, ` + jobCols("jobs") + withClaim("jobs") + ` WHERE jobs.id IN (SELECT id FROM o)
		UNION ALL
		SELECT false, ` + jobCols("jobs") + withClaim("jobs") + ` WHERE jobs.id IN (SELECT job_id FROM k WHERE k.job_id <> ` + id + `)`
	return sql, a
}

// readInsertedJob reads insertJobSQL's rows; errSlowPath when there is none.
func readInsertedJob(rows pgx.Rows, err error, p *registry.JobInsertParams) (*registry.Job, bool, error) {
	if err != nil {
		return nil, false, insertError(err, p)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := insertError(rows.Err(), p); err != nil {
			return nil, false, err
		}
		return nil, false, errSlowPath
	}
	var created bool
	j, err := scanJob(rows, &created)
	if err != nil {
		return nil, false, err
	}
	rows.Close()
	if err := insertError(rows.Err(), p); err != nil {
		return nil, false, err
	}
	if created {
		return &p.Job, true, nil
	}
	return j, false, nil
}

func insertError(err error, p *registry.JobInsertParams) error {
	if isForeignKeyViolation(err) {
		return errNoCluster(p.Job.ClusterID)
	}
	return err
}

const jobInsertAttempts = 5

// insertJob is JobInsert on q (a connection or a transaction): its
// statement, run again when it could not tell (insertJobSQL). Each run of a
// keyed one is a savepoint of its own, so that a key it gave to a job it then
// did not insert is given back.
func insertJob(ctx context.Context, q db, p registry.JobInsertParams) (*registry.Job, bool, error) {
	keyed := p.Job.IdempotencyKey != "" && !p.KeyUntil.IsZero()
	for range jobInsertAttempts {
		if keyed {
			if _, err := q.Exec(ctx, "SAVEPOINT job_insert"); err != nil {
				return nil, false, err
			}
		}
		sql, a := insertJobSQL(p)
		rows, err := q.Query(ctx, sql, a...)
		j, created, err := readInsertedJob(rows, err, &p)
		switch {
		case !keyed && errors.Is(err, errSlowPath):
			continue // the open job ended in between: insert again
		case !keyed || err != nil && !errors.Is(err, errSlowPath):
			return j, created, err
		case err == nil:
			_, err = q.Exec(ctx, "RELEASE SAVEPOINT job_insert")
			return j, created, err
		}
		if _, err := q.Exec(ctx, "ROLLBACK TO SAVEPOINT job_insert"); err != nil {
			return nil, false, err
		}
		if err := keyOfDeletedJob(ctx, q, p); err != nil {
			return nil, false, err
		}
	}
	return nil, false, registry.Errorf(registry.CodeConflict, "jobs with idempotency key %q keep opening and closing on cluster %s; try again", p.Job.IdempotencyKey, p.Job.ClusterID)
}

// keyOfDeletedJob tells why a keyed insert's statement answered no row when
// the job its key answers was deleted: a statement of its own sees every job
// committed before it, so a key whose job it cannot see answers a job that
// is no more (KeyOfDeletedJob). Nil otherwise.
func keyOfDeletedJob(ctx context.Context, q db, p registry.JobInsertParams) error {
	if p.TakeKey {
		return nil
	}
	var id string
	var until time.Time
	err := q.QueryRow(ctx, `SELECT job_id, expires_at FROM idempotency_keys k WHERE cluster_id = $1 AND key = $2 AND expires_at > $3
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = k.job_id)`,
		p.Job.ClusterID, p.Job.IdempotencyKey, col.MS(p.Job.CreatedAt)).Scan(&id, col.Time(&until))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return registry.KeyOfDeletedJob(p.Job.IdempotencyKey, id, until)
}
