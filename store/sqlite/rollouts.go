package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
	"github.com/tetherhq/tether/store/internal/record"
)

func scanRollout(row scanner) (*registry.Rollout, error) {
	var r registry.Rollout
	var payload []byte
	var pauseMS int64
	err := row.Scan(&r.ID, &r.Name, &r.Organization, &r.Selector, &r.Kind, col.Bytes(&payload), &r.MaxParallel, &r.MaxFailures, &pauseMS,
		&r.Order, &r.State, &r.FailureBase, col.Time(&r.NextWaveAt), &r.Version, &r.CreatedBy, col.Time(&r.CreatedAt), col.Time(&r.UpdatedAt),
		col.Time(&r.FinishedAt))
	if err != nil {
		return nil, err
	}
	r.Payload = json.RawMessage(payload)
	r.PauseBetween = time.Duration(pauseMS) * time.Millisecond
	r.Counts = map[registry.TargetState]int{}
	return &r, nil
}

const targetFrom = ` FROM rollout_targets t LEFT JOIN jobs j ON j.id = t.job_id`

func scanTarget(row scanner) (registry.RolloutTarget, error) {
	var t registry.RolloutTarget
	var jobState, jobError string
	var jobAttempt sql.NullInt64
	err := row.Scan(&t.Position, &t.ClusterID, &t.ClusterName, &t.State, &t.Reason, &t.JobID, &t.Attempts, col.Time(&t.StartedAt),
		col.Time(&t.FinishedAt), col.String(&jobState), &jobAttempt, col.String(&jobError))
	t.JobState, t.JobAttempt, t.JobError = registry.JobState(jobState), int(jobAttempt.Int64), jobError
	return t, err
}

func (s *Store) RolloutGet(ctx context.Context, id string) (*registry.Rollout, error) {
	return s.rolloutWhere(ctx, "id = ?", id)
}

func (s *Store) RolloutGetByName(ctx context.Context, name string) (*registry.Rollout, error) {
	return s.rolloutWhere(ctx, "name = ? COLLATE NOCASE", name)
}

func (s *Store) rolloutWhere(ctx context.Context, where string, arg string) (*registry.Rollout, error) {
	r, err := scanRollout(s.queryRow(ctx, "SELECT "+record.RolloutCols+" FROM rollouts WHERE "+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, registry.Errorf(registry.CodeNotFound, "rollout %s does not exist", arg)
	}
	if err != nil {
		return nil, s.wrap(err, "read a rollout")
	}
	rows, err := s.query(ctx, "SELECT "+record.TargetCols+targetFrom+" WHERE t.rollout_id = ? ORDER BY t.position", r.ID)
	if err != nil {
		return nil, s.wrap(err, "read a rollout's targets")
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTarget(rows)
		if err != nil {
			return nil, s.wrap(err, "read a rollout's targets")
		}
		r.Targets = append(r.Targets, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err, "read a rollout's targets")
	}
	r.CountTargets()
	return r, nil
}

func (s *Store) RolloutList(ctx context.Context, p registry.RolloutListParams) ([]registry.Rollout, error) {
	var where []string
	var args []any
	if p.Organization != "" {
		where = append(where, "organization = ?")
		args = append(args, p.Organization)
	}
	if len(p.States) > 0 {
		where = append(where, "state IN ("+placeholders(len(p.States))+")")
		for _, st := range p.States {
			args = append(args, st)
		}
	}
	if p.Active {
		where = append(where, "(state = 'running' OR id IN (SELECT rollout_id FROM rollout_targets WHERE state = 'running'))")
	}
	if c := p.After; c != nil {
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, col.MS(c.CreatedAt), col.MS(c.CreatedAt), c.ID)
	}
	q := "SELECT " + record.RolloutCols + " FROM rollouts"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC"
	if p.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, p.Limit)
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, s.wrap(err, "read rollouts")
	}
	out := []registry.Rollout{}
	byID := map[string]int{}
	for rows.Next() {
		r, err := scanRollout(rows)
		if err != nil {
			rows.Close()
			return nil, s.wrap(err, "read rollouts")
		}
		byID[r.ID] = len(out)
		out = append(out, *r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.wrap(err, "read rollouts")
	}
	if len(out) == 0 {
		return out, nil
	}
	ids := make([]any, 0, len(out))
	for _, r := range out {
		ids = append(ids, r.ID)
	}
	counts, err := s.query(ctx, `SELECT rollout_id, state, count(*) FROM rollout_targets
		WHERE rollout_id IN (`+placeholders(len(ids))+`) GROUP BY rollout_id, state`, ids...)
	if err != nil {
		return nil, s.wrap(err, "count rollout targets")
	}
	defer counts.Close()
	for counts.Next() {
		var id string
		var st registry.TargetState
		var n int
		if err := counts.Scan(&id, &st, &n); err != nil {
			return nil, s.wrap(err, "count rollout targets")
		}
		out[byID[id]].Counts[st] = n
	}
	return out, s.wrap(counts.Err(), "count rollout targets")
}

func (s *Store) RolloutCreate(ctx context.Context, p registry.RolloutCreateParams) error {
	return s.write(ctx, func(t *txn) error {
		r := &p.Rollout
		_, err := t.exec(`INSERT INTO rollouts (`+record.RolloutCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Name, r.Organization, r.Selector, r.Kind, []byte(r.Payload), r.MaxParallel, r.MaxFailures, r.PauseBetween.Milliseconds(),
			r.Order, r.State, r.FailureBase, col.MS(r.NextWaveAt), r.Version, r.CreatedBy, col.MS(r.CreatedAt), col.MS(r.UpdatedAt), col.MS(r.FinishedAt))
		if isUniqueViolation(err) {
			return registry.Errorf(registry.CodeConflict, "a rollout named %q already exists; choose another name", r.Name)
		}
		if err != nil {
			return err
		}
		for _, tg := range r.Targets {
			_, err := t.exec(`INSERT INTO rollout_targets (rollout_id, position, cluster_id, cluster_name, state, reason, job_id, attempts, started_at, finished_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				r.ID, tg.Position, tg.ClusterID, tg.ClusterName, tg.State, tg.Reason, tg.JobID, tg.Attempts, col.MS(tg.StartedAt), col.MS(tg.FinishedAt))
			if err != nil {
				return err
			}
		}
		return t.audit(p.Audit...)
	})
}

func (s *Store) RolloutApply(ctx context.Context, p registry.RolloutApplyParams) (*registry.Rollout, error) {
	err := s.write(ctx, func(t *txn) error {
		var cur int64
		err := t.selectRow("SELECT version FROM rollouts WHERE id = ?", p.ID).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.CodeNotFound, "rollout %s does not exist", p.ID)
		}
		if err != nil {
			return err
		}
		if cur != p.Version {
			return registry.Errorf(registry.CodeConflict, "rollout %s changed meanwhile: this change was made from version %d, it is now at version %d", p.ID, p.Version, cur)
		}
		for _, c := range p.Cancel {
			if _, _, err := t.updateJob(c); err != nil {
				return err
			}
		}
		for _, tg := range p.Targets {
			jobID := tg.JobID
			if tg.NewJob != nil {
				j, _, err := t.insertJob(*tg.NewJob)
				if err != nil {
					return err
				}
				jobID = j.ID // an open job with the same key is linked, not duplicated
			}
			_, err := t.exec(`UPDATE rollout_targets SET state = ?, reason = ?, job_id = ?, attempts = ?, started_at = ?, finished_at = ?
				WHERE rollout_id = ? AND position = ?`,
				tg.State, tg.Reason, jobID, tg.Attempts, col.MS(tg.StartedAt), col.MS(tg.FinishedAt), p.ID, tg.Position)
			if err != nil {
				return err
			}
		}
		// The rollout's row last: its triggers (the feed, webhooks) see the
		// targets as this step leaves them.
		sets := []string{"version = version + 1", "updated_at = ?"}
		args := []any{col.MS(p.Now)}
		add := func(c string, v any) {
			sets = append(sets, c+" = ?")
			args = append(args, v)
		}
		if p.Set.State != "" {
			add("state", p.Set.State)
		}
		if p.Set.FailureBase != nil {
			add("failure_base", *p.Set.FailureBase)
		}
		if p.Set.NextWaveAt != nil {
			add("next_wave_at", col.MS(*p.Set.NextWaveAt))
		}
		if p.Set.FinishedAt != nil {
			add("finished_at", col.MS(*p.Set.FinishedAt))
		}
		args = append(args, p.ID, p.Version)
		_, err = t.exec("UPDATE rollouts SET "+strings.Join(sets, ", ")+" WHERE id = ? AND version = ?", args...)
		if err != nil {
			return err
		}
		return t.audit(p.Audit...)
	})
	if err != nil {
		return nil, err
	}
	return s.RolloutGet(ctx, p.ID)
}
