package postgres

import (
	"context"
	"strings"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// A job's lease lives in its claim, a row of job_claim (migration 0017), not
// in the job's row: a lease heartbeat, a fleet's most frequent write, then
// rewrites a narrow row with one index besides its key, instead of the job's
// wide row, its indexes, its feed trigger and the change feed. A job has a
// claim exactly while it is in_progress with a lease. Every read of a job
// joins its claim (withClaim); every write of a job's lease is a CTE of the
// statement that updates the job (claimWrite), or a heartbeat
// (JobRenewLease), or the reaper's.

// claimWrite renders what s changes of the claim of the job the relation
// rel holds (none when the update did not apply) as a data-modifying
// statement for a CTE, whose rows are the claim as it now is: job_id,
// lease_expires_at and heard_at, NULLs when it was deleted. It is "" when s
// leaves the claim alone. Of the claim's changes a JobSet may ask for, the
// last one in JobSet's order wins (a transition asks for one at most).
func claimWrite(a *args, s *registry.JobSet, rel string) string {
	const returning = " RETURNING job_id, lease_expires_at, heard_at"
	ofJob := " WHERE job_id IN (SELECT id FROM " + rel + ")"
	drop := "DELETE FROM job_claim" + ofJob + " RETURNING job_id, NULL::BIGINT AS lease_expires_at, NULL::BIGINT AS heard_at"
	switch {
	case s.RenewLease:
		// Only a leased job has a lease to renew; its last heartbeat stays.
		return "UPDATE job_claim SET lease_expires_at = " + a.add(col.MS(s.Now)) + "::BIGINT + lease_seconds * 1000::BIGINT" + ofJob + returning
	case s.LeaseExpiresAt != nil && s.LeaseExpiresAt.IsZero():
		return drop
	case s.LeaseExpiresAt != nil:
		return "UPDATE job_claim SET lease_expires_at = " + a.add(col.MS(*s.LeaseExpiresAt)) + "::BIGINT" + ofJob + returning
	case s.Claim != nil && !s.Claim.LeaseExpiresAt.IsZero():
		// A new claim: no heartbeat heard yet.
		return "INSERT INTO job_claim (job_id, lease_seconds, lease_expires_at) SELECT id, " + a.add(s.Claim.LeaseSeconds) + "::INTEGER, " +
			a.add(col.MS(s.Claim.LeaseExpiresAt)) + "::BIGINT FROM " + rel +
			" ON CONFLICT (job_id) DO UPDATE SET lease_seconds = EXCLUDED.lease_seconds, lease_expires_at = EXCLUDED.lease_expires_at, heard_at = NULL" +
			returning
	case s.Claim != nil, s.Reopen:
		return drop
	}
	return ""
}

// jobKeyCols are jobCols("jobs") without the payload and the result (NULLs
// instead): what a heartbeat returns, the key fields an agent's write needs
// back (see JobUpdateParams.FullJob).
var jobKeyCols = strings.NewReplacer("jobs.payload,", "NULL::BYTEA,", "jobs.result,", "NULL::BYTEA,").Replace(jobCols("jobs"))

// JobRenewLease is one statement, through the writer: it updates the job's
// claim where the job's row (which it only reads) says the lease is the
// caller's. The job's row, its indexes, its history, the audit and the
// change feed are left alone. A heartbeat racing the job's end either
// renewed the claim before the end deleted it, or finds no claim; one
// racing the reaper waits on the claim the reaper locked and finds it gone.
func (s *Store) JobRenewLease(ctx context.Context, p registry.JobRenewLeaseParams) (*registry.Job, bool, error) {
	var a args
	id, now := a.add(p.ID), a.add(col.MS(p.Now))+"::BIGINT"
	owner := "jobs.id = " + id + " AND jobs.cluster_id = " + a.add(p.ClusterID) + " AND jobs.state = 'in_progress'"
	if p.ClaimID != "" {
		owner += " AND jobs.claim_id = " + a.add(p.ClaimID)
	}
	sql := `WITH r AS (UPDATE job_claim SET lease_expires_at = ` + now + ` + lease_seconds * 1000::BIGINT, heard_at = ` + now + `
			WHERE job_id = ` + id + ` AND EXISTS (SELECT 1 FROM jobs WHERE ` + owner + `)
			RETURNING job_id, lease_expires_at, heard_at)`
	cur, branch := asItStands(id, "r")
	sql += ", " + cur + " SELECT true, " + jobKeyCols + " FROM r c JOIN jobs ON jobs.id = c.job_id" + branch
	return s.writeJobStatement(ctx, "renew a job's lease", p.ID, sql, a)
}
