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

func scanRollout(row pgx.Row) (*registry.Rollout, error) {
	var r registry.Rollout
	var kind, order, state string
	var pauseMS int64
	err := row.Scan(&r.ID, &r.Name, &r.Organization, &r.Selector, &kind, col.Bytes((*[]byte)(&r.Payload)), &r.MaxParallel, &r.MaxFailures, &pauseMS,
		&order, &state, &r.FailureBase, col.Time(&r.NextWaveAt), &r.Version, &r.CreatedBy, col.Time(&r.CreatedAt), col.Time(&r.UpdatedAt),
		col.Time(&r.FinishedAt))
	if err != nil {
		return nil, err
	}
	r.Kind, r.Order, r.State = registry.JobKind(kind), order, registry.RolloutState(state)
	r.PauseBetween = time.Duration(pauseMS) * time.Millisecond
	r.Counts = map[registry.TargetState]int{}
	return &r, nil
}

const targetFrom = ` FROM rollout_targets t LEFT JOIN jobs j ON j.id = t.job_id`

func scanTarget(row pgx.Rows) (registry.RolloutTarget, error) {
	var t registry.RolloutTarget
	var state string
	var jobState, jobError *string
	var jobAttempt *int
	err := row.Scan(&t.Position, &t.ClusterID, &t.ClusterName, &state, &t.Reason, &t.JobID, &t.Attempts, col.Time(&t.StartedAt),
		col.Time(&t.FinishedAt), &jobState, &jobAttempt, &jobError)
	t.State = registry.TargetState(state)
	if jobState != nil {
		t.JobState, t.JobAttempt, t.JobError = registry.JobState(*jobState), *jobAttempt, *jobError
	}
	return t, err
}

func (s *Store) RolloutGet(ctx context.Context, id string) (*registry.Rollout, error) {
	return s.rolloutWhere(ctx, "id = $1", id)
}

func (s *Store) RolloutGetByName(ctx context.Context, name string) (*registry.Rollout, error) {
	return s.rolloutWhere(ctx, `lower(name) = lower($1::TEXT COLLATE "C")`, name)
}

func (s *Store) rolloutWhere(ctx context.Context, where string, arg string) (*registry.Rollout, error) {
	r, err := scanRollout(s.queryRow(ctx, "SELECT "+record.RolloutCols+" FROM rollouts WHERE "+where, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "rollout %s does not exist", arg)
	}
	if err != nil {
		return nil, s.wrap(err, "read a rollout")
	}
	rows, err := s.query(ctx, "read a rollout's targets", "SELECT "+record.TargetCols+targetFrom+" WHERE t.rollout_id = $1 ORDER BY t.position", r.ID)
	if err != nil {
		return nil, err
	}
	r.Targets, err = collect(s, rows, "read a rollout's targets", scanTarget)
	if err != nil {
		return nil, err
	}
	r.CountTargets()
	return r, nil
}

func (s *Store) RolloutList(ctx context.Context, p registry.RolloutListParams) ([]registry.Rollout, error) {
	var a args
	var where []string
	if p.Organization != "" {
		where = append(where, "organization = "+a.add(p.Organization))
	}
	if len(p.States) > 0 {
		states := make([]string, len(p.States))
		for i, st := range p.States {
			states[i] = string(st)
		}
		where = append(where, "state IN ("+list(&a, states)+")")
	}
	if p.Active {
		where = append(where, "(state = 'running' OR id IN (SELECT rollout_id FROM rollout_targets WHERE state = 'running'))")
	}
	if c := p.After; c != nil {
		at := a.add(col.MS(c.CreatedAt))
		where = append(where, "(created_at < "+at+" OR (created_at = "+at+" AND id < "+a.add(c.ID)+"))")
	}
	q := "SELECT " + record.RolloutCols + " FROM rollouts"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC"
	if p.Limit > 0 {
		q += " LIMIT " + a.add(p.Limit)
	}
	rows, err := s.query(ctx, "read rollouts", q, a...)
	if err != nil {
		return nil, err
	}
	out, err := collect(s, rows, "read rollouts", func(r pgx.Rows) (registry.Rollout, error) {
		ro, err := scanRollout(r)
		if err != nil {
			return registry.Rollout{}, err
		}
		return *ro, nil
	})
	if err != nil || len(out) == 0 {
		return out, err
	}
	byID := map[string]int{}
	ids := make([]string, len(out))
	for i, r := range out {
		byID[r.ID], ids[i] = i, r.ID
	}
	type count struct {
		id    string
		state string
		n     int
	}
	rows, err = s.query(ctx, "count rollout targets", `SELECT rollout_id, state, count(*) FROM rollout_targets
		WHERE rollout_id = ANY($1) GROUP BY rollout_id, state`, ids)
	if err != nil {
		return nil, err
	}
	counts, err := collect(s, rows, "count rollout targets", func(r pgx.Rows) (count, error) {
		var c count
		return c, r.Scan(&c.id, &c.state, &c.n)
	})
	if err != nil {
		return nil, err
	}
	for _, c := range counts {
		out[byID[c.id]].Counts[registry.TargetState(c.state)] = c.n
	}
	return out, nil
}

func (s *Store) RolloutCreate(ctx context.Context, p registry.RolloutCreateParams) error {
	return s.write(ctx, "create a rollout", func(ctx context.Context, q db) error {
		r := &p.Rollout
		_, err := q.Exec(ctx, `INSERT INTO rollouts (`+record.RolloutCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
			r.ID, r.Name, r.Organization, r.Selector, string(r.Kind), []byte(r.Payload), r.MaxParallel, r.MaxFailures, r.PauseBetween.Milliseconds(),
			r.Order, string(r.State), r.FailureBase, col.MS(r.NextWaveAt), r.Version, r.CreatedBy, col.MS(r.CreatedAt), col.MS(r.UpdatedAt), col.MS(r.FinishedAt))
		if isUniqueViolation(err, "rollouts_name") {
			return registry.Errorf(registry.CodeConflict, "a rollout named %q already exists; choose another name", r.Name)
		}
		if err != nil {
			return err
		}
		rows := make([][]any, len(r.Targets))
		for i, t := range r.Targets {
			rows[i] = []any{r.ID, t.Position, t.ClusterID, t.ClusterName, string(t.State), t.Reason, t.JobID, t.Attempts, col.MS(t.StartedAt), col.MS(t.FinishedAt)}
		}
		if _, err := q.CopyFrom(ctx, pgx.Identifier{"rollout_targets"},
			[]string{"rollout_id", "position", "cluster_id", "cluster_name", "state", "reason", "job_id", "attempts", "started_at", "finished_at"},
			pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit...)
	})
}

// RolloutApply locks the rollout's row first and then the jobs it cancels,
// in one order, before it writes anything: the agents' updates of those jobs,
// which run beside it (see writer.go), wait for it or it for them, never in
// a cycle.
func (s *Store) RolloutApply(ctx context.Context, p registry.RolloutApplyParams) (*registry.Rollout, error) {
	err := s.write(ctx, "advance a rollout", func(ctx context.Context, q db) error {
		var cur int64
		err := q.QueryRow(ctx, "SELECT version FROM rollouts WHERE id = $1 FOR UPDATE", p.ID).Scan(&cur)
		if errors.Is(err, pgx.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "rollout %s does not exist", p.ID)
		}
		if err != nil {
			return err
		}
		if cur != p.Version {
			return registry.Errorf(registry.CodeConflict, "rollout %s changed meanwhile: this change was made from version %d, it is now at version %d", p.ID, p.Version, cur)
		}
		if len(p.Cancel) > 0 {
			ids := make([]string, len(p.Cancel))
			for i, c := range p.Cancel {
				ids[i] = c.ID
			}
			if _, err := q.Exec(ctx, "SELECT id FROM jobs WHERE id = ANY($1) ORDER BY id FOR UPDATE", ids); err != nil {
				return err
			}
		}
		for _, c := range p.Cancel {
			if _, _, err := updateJob(ctx, q, c); err != nil {
				return err
			}
		}
		for _, t := range p.Targets {
			jobID := t.JobID
			if t.NewJob != nil {
				j, _, err := insertJob(ctx, q, *t.NewJob)
				if err != nil {
					return err
				}
				jobID = j.ID // an open job with the same key is linked, not duplicated
			}
			_, err := q.Exec(ctx, `UPDATE rollout_targets SET state = $1, reason = $2, job_id = $3, attempts = $4, started_at = $5, finished_at = $6
				WHERE rollout_id = $7 AND position = $8`,
				string(t.State), t.Reason, jobID, t.Attempts, col.MS(t.StartedAt), col.MS(t.FinishedAt), p.ID, t.Position)
			if err != nil {
				return err
			}
		}
		// The rollout's row last: its triggers (the feed, webhooks) see the
		// targets as this step leaves them.
		var a args
		sets := []string{"version = version + 1", "updated_at = " + a.add(col.MS(p.Now))}
		if p.Set.State != "" {
			sets = append(sets, "state = "+a.add(string(p.Set.State)))
		}
		if p.Set.FailureBase != nil {
			sets = append(sets, "failure_base = "+a.add(*p.Set.FailureBase))
		}
		if p.Set.NextWaveAt != nil {
			sets = append(sets, "next_wave_at = "+a.add(col.MS(*p.Set.NextWaveAt)))
		}
		if p.Set.FinishedAt != nil {
			sets = append(sets, "finished_at = "+a.add(col.MS(*p.Set.FinishedAt)))
		}
		if _, err := q.Exec(ctx, "UPDATE rollouts SET "+strings.Join(sets, ", ")+" WHERE id = "+a.add(p.ID), a...); err != nil {
			return err
		}
		return insertAudit(ctx, q, p.Audit...)
	})
	if err != nil {
		return nil, err
	}
	return s.RolloutGet(ctx, p.ID)
}
