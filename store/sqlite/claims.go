package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// A job's lease lives in its claim (job_claim, migration 0017): a narrow row
// that exists exactly while the job is in_progress with a lease, so that a
// lease heartbeat rewrites it alone.

// writeClaim applies the lease part of an applied update to j's claim and
// sets j.LeaseExpiresAt to the lease as it now stands. changed says whether
// the claim was written.
//
// j comes back from the update with its claim's lease (a claim's lease is
// never NULL): a job without one has no claim to delete or move, and those
// statements are skipped. That is an agent's every ack, status and result
// when its credential takes no lease, as the public operator's does: three
// statements a lifecycle that changed nothing.
func (t *txn) writeClaim(j *registry.Job, s *registry.JobSet) (changed bool, err error) {
	has := !j.LeaseExpiresAt.IsZero()
	drop := func() error {
		if !has {
			return nil
		}
		changed, has = true, false
		return t.deleteClaim(j)
	}
	if s.Reopen {
		err = drop()
	}
	if c := s.Claim; c != nil && err == nil {
		if c.LeaseExpiresAt.IsZero() {
			err = drop()
		} else {
			err, changed, has = t.insertClaim(j, c), true, true
		}
	}
	if s.LeaseExpiresAt != nil && err == nil {
		if s.LeaseExpiresAt.IsZero() {
			err = drop()
		} else if has {
			err, changed = t.setLease(j, "lease_expires_at = ?", col.MS(*s.LeaseExpiresAt)), true
		}
	}
	if s.RenewLease && err == nil && has {
		err, changed = t.setLease(j, "lease_expires_at = ? + lease_seconds * 1000", col.MS(s.Now)), true
	}
	if err != nil {
		return false, t.s.wrap(err, "write a job's lease")
	}
	return changed, nil
}

func (t *txn) insertClaim(j *registry.Job, c *registry.JobClaimSet) error {
	_, err := t.exec(`INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at) VALUES (?, ?, ?)
		ON CONFLICT (job_id) DO UPDATE SET lease_seconds = excluded.lease_seconds,
			lease_expires_at = excluded.lease_expires_at, heard_at = NULL`,
		j.ID, c.LeaseSeconds, col.MS(c.LeaseExpiresAt))
	j.LeaseExpiresAt = c.LeaseExpiresAt
	return err
}

func (t *txn) deleteClaim(j *registry.Job) error {
	_, err := t.exec("DELETE FROM job_claim WHERE job_id = ?", j.ID)
	j.LeaseExpiresAt = time.Time{}
	return err
}

// setLease updates j's claim, if it has one, and reads the lease's new end.
func (t *txn) setLease(j *registry.Job, set string, arg any) error {
	err := t.queryRow("UPDATE job_claim SET "+set+" WHERE job_id = ? RETURNING lease_expires_at", arg, j.ID).Scan(col.Time(&j.LeaseExpiresAt))
	if errors.Is(err, sql.ErrNoRows) {
		j.LeaseExpiresAt = time.Time{} // no lease to move
		return nil
	}
	return err
}

// JobRenewLease writes the job's claim and nothing else: no job row, no
// history, no change-feed row.
func (s *Store) JobRenewLease(ctx context.Context, p registry.JobRenewLeaseParams) (*registry.Job, bool, error) {
	var out *registry.Job
	applied := false
	err := s.write(ctx, func(t *txn) error {
		out, applied = nil, false // a batch may run its requests twice (see commit)
		now := col.MS(p.Now)
		// The job's row is only read: the lease is the caller's while the
		// job is in progress under its cluster (and claim, when given).
		owner, args := "id = ? AND cluster_id = ? AND state = 'in_progress'", []any{now, now, p.ID, p.ID, p.ClusterID}
		if p.ClaimID != "" {
			owner += " AND claim_id = ?"
			args = append(args, p.ClaimID)
		}
		var lease time.Time
		err := t.queryRow(`UPDATE job_claim SET lease_expires_at = ? + lease_seconds * 1000, heard_at = ?
			WHERE job_id = ? AND EXISTS (SELECT 1 FROM jobs WHERE `+owner+`) RETURNING lease_expires_at`, args...).Scan(col.Time(&lease))
		if errors.Is(err, sql.ErrNoRows) {
			out, err = t.jobByID(p.ID)
			return err
		}
		if err != nil {
			return s.wrap(err, "renew a job's lease")
		}
		j := &registry.Job{LeaseExpiresAt: lease}
		err = t.selectRow("SELECT id, cluster_id, kind, state, attempt, claim_id, updated_at FROM jobs WHERE id = ?", p.ID).Scan(
			&j.ID, &j.ClusterID, &j.Kind, &j.State, &j.Attempt, col.String(&j.ClaimID), col.Time(&j.UpdatedAt))
		if err != nil {
			return s.wrap(err, "renew a job's lease")
		}
		out, applied = j, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return out, applied, nil
}
