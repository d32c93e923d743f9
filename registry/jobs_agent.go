package registry

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// LeaseFor is the lease an agent gets on ack: the cluster's lease for a lease
// client, none otherwise (seed 004: reclaim is opt-in).
func LeaseFor(a *Agent) time.Duration {
	if !a.Credential.HasCapability(CapabilityLease) || a.Cluster.Policy.LeaseSeconds <= 0 {
		return 0
	}
	return time.Duration(a.Cluster.Policy.LeaseSeconds) * time.Second
}

// AckJob is the claim: exactly one of concurrent acks of a queued job wins.
func (r *Registry) AckJob(ctx context.Context, a *Agent, jobID string) (*Claim, error) {
	if err := agentJobID(jobID); err != nil {
		return nil, err
	}
	now := r.Now()
	claim := JobClaimSet{ClaimID: newClaimID(), ClaimedAt: now, ClaimedBy: a.Credential.ID}
	if lease := LeaseFor(a); lease > 0 {
		claim.LeaseSeconds = int(lease / time.Second)
		claim.LeaseExpiresAt = now.Add(lease)
	}
	msg := "claimed by " + a.Credential.ID
	if !claim.LeaseExpiresAt.IsZero() {
		msg += fmt.Sprintf(" with a %ds lease", claim.LeaseSeconds)
	} else {
		msg += " without a lease (never reclaimed automatically)"
	}
	j, applied, err := r.store.JobUpdate(ctx, JobUpdateParams{
		ID: jobID, ClusterID: a.Cluster.ID, FromStates: []JobState{JobQueued}, NotExpiredAt: now,
		Set:     JobSet{Now: now, State: JobInProgress, Claim: &claim, LastActivityAt: now},
		History: &JobHistoryEntry{At: now, Type: HistoryClaimed, Actor: a.Actor().String(), Message: msg},
	})
	if err != nil {
		return nil, err
	}
	if !applied {
		return nil, r.refuseJob(a, j, jobID, "", opAck, now)
	}
	return &Claim{ClaimID: claim.ClaimID, LeaseExpiresAt: claim.LeaseExpiresAt, Job: j}, nil
}

// ReportStatus records a job's interim status and renews its lease. claimID
// is the X-Claim-Id the agent echoed, or empty.
func (r *Registry) ReportStatus(ctx context.Context, a *Agent, jobID, claimID string, s StatusReport) error {
	if err := agentJobID(jobID); err != nil {
		return err
	}
	if err := agentText("phase", &s.Phase); err != nil {
		return err
	}
	if err := agentText("message", &s.Message); err != nil {
		return err
	}
	if err := agentConditions("conditions", s.Conditions); err != nil {
		return err
	}
	now := r.Now()
	phase := s.Phase
	j, applied, err := r.store.JobUpdate(ctx, JobUpdateParams{
		ID: jobID, ClusterID: a.Cluster.ID, FromStates: []JobState{JobInProgress}, ClaimID: claimID,
		Set: JobSet{Now: now, RenewLease: true, LastActivityAt: now, Phase: &phase},
		History: &JobHistoryEntry{
			At: now, Type: HistoryStatus, Actor: a.Actor().String(), Phase: s.Phase, Message: s.Message,
			Conditions: s.Conditions, ReportedAt: s.Timestamp,
		},
	})
	if err != nil {
		return err
	}
	if !applied {
		return r.refuseJob(a, j, jobID, claimID, opStatus, now)
	}
	return nil
}

// HeartbeatJob renews a job's lease and returns its new end (zero when the
// job has no lease). A leased job's heartbeat writes only its claim; a job
// claimed without a lease has none to renew, and its heartbeat records that
// its agent is alive on the job itself (the silent-job rule reads it).
func (r *Registry) HeartbeatJob(ctx context.Context, a *Agent, jobID, claimID string) (time.Time, error) {
	if err := agentJobID(jobID); err != nil {
		return time.Time{}, err
	}
	now := r.Now()
	j, applied, err := r.store.JobRenewLease(ctx, JobRenewLeaseParams{ID: jobID, ClusterID: a.Cluster.ID, ClaimID: claimID, Now: now})
	if err != nil {
		return time.Time{}, err
	}
	if applied {
		return j.LeaseExpiresAt, nil
	}
	if j != nil && j.State == JobInProgress && j.LeaseExpiresAt.IsZero() {
		j, applied, err = r.store.JobUpdate(ctx, JobUpdateParams{
			ID: jobID, ClusterID: a.Cluster.ID, FromStates: []JobState{JobInProgress}, ClaimID: claimID,
			Set: JobSet{Now: now, LastActivityAt: now},
		})
		if err != nil {
			return time.Time{}, err
		}
		if applied {
			return time.Time{}, nil
		}
	}
	return time.Time{}, r.refuseJob(a, j, jobID, claimID, opHeartbeat, now)
}

// ReportResult records a job's result, exactly once. A queued job (never
// acked) accepts only a noop result: the agent skipping an expired job. It
// returns the job as finished: its key fields only (JobUpdateParams.FullJob).
func (r *Registry) ReportResult(ctx context.Context, a *Agent, jobID, claimID string, res ResultReport) (*Job, error) {
	if err := agentJobID(jobID); err != nil {
		return nil, err
	}
	if err := agentText("error", &res.Error); err != nil {
		return nil, err
	}
	state, ok := res.Outcome.State()
	if !ok {
		return nil, Errorf(CodeInvalidOutcome, "outcome %q is not one of succeeded, failed, noop, conflict", res.Outcome)
	}
	if (res.Outcome == OutcomeFailed || res.Outcome == OutcomeConflict) && strings.TrimSpace(res.Error) == "" {
		return nil, Errorf(CodeErrorRequired, "a %s result must say what went wrong in its error field", res.Outcome)
	}
	from := []JobState{JobInProgress}
	if res.Outcome == OutcomeNoop {
		from = append(from, JobQueued)
	}
	now := r.Now()
	var noLease time.Time
	errText := res.Error
	msg := string(res.Outcome)
	if errText != "" {
		msg += ": " + errText
	}
	j, applied, err := r.store.JobUpdate(ctx, JobUpdateParams{
		ID: jobID, ClusterID: a.Cluster.ID, FromStates: from, ClaimID: claimID,
		Set: JobSet{
			Now: now, State: state, Outcome: res.Outcome, Error: &errText, Result: res.Body,
			FinishedAt: now, LastActivityAt: now, LeaseExpiresAt: &noLease,
		},
		History: &JobHistoryEntry{At: now, Type: HistoryResult, Actor: a.Actor().String(), Message: msg},
		Audit:   ptr(r.auditEntry(WithActor(ctx, a.Actor()), AuditJobResult, a.Cluster.ID, "job", jobID, msg)),
	})
	if err != nil {
		return nil, err
	}
	if !applied {
		return nil, r.refuseJob(a, j, jobID, claimID, opResult, now)
	}
	return j, nil
}

type jobOp int

const (
	opAck jobOp = iota
	opStatus
	opHeartbeat
	opResult
)

// refuseJob explains why an agent's conditional job update did not apply, from
// the job as it is now.
func (r *Registry) refuseJob(a *Agent, j *Job, jobID, claimID string, op jobOp, now time.Time) error {
	switch {
	case j == nil:
		return Errorf(CodeJobNotFound, "job %s does not exist", jobID)
	case j.ClusterID != a.Cluster.ID:
		return Errorf(CodeForbidden, "job %s does not belong to this credential's cluster", jobID)
	case j.State == JobCanceled:
		if op == opAck {
			return Errorf(CodeJobClosed, "job %s was canceled by an admin", jobID)
		}
		return Errorf(CodeJobCanceled, "job %s was canceled by an admin; stop working on it", jobID)
	}
	if op == opAck {
		switch {
		case j.State == JobInProgress:
			return Errorf(CodeAlreadyClaimed, "job %s is already claimed", jobID)
		case j.State == JobQueued && !j.ExpiresAt.IsZero() && !now.Before(j.ExpiresAt):
			return Errorf(CodeJobClosed, "job %s expired at %s; report it with outcome noop and error expired", jobID, j.ExpiresAt.Format(time.RFC3339))
		}
		return Errorf(CodeJobClosed, "job %s is closed (%s)", jobID, j.State)
	}
	switch {
	case j.State.Terminal() && op == opResult && j.State != JobExpired:
		return Errorf(CodeResultAlreadyRecorded, "job %s already has its result (%s)", jobID, j.State)
	case j.State.Terminal():
		return Errorf(CodeJobClosed, "job %s is closed (%s)", jobID, j.State)
	case j.State == JobQueued && op == opResult:
		return Errorf(CodeStaleClaim, "job %s is queued and not claimed: only a noop result is accepted before an ack", jobID)
	case j.State == JobQueued:
		return Errorf(CodeStaleClaim, "job %s is not claimed (it was requeued or reclaimed); stop working on it", jobID)
	case claimID != "" && claimID != j.ClaimID:
		return Errorf(CodeStaleClaim, "claim %s is no longer the claim of job %s (it was reclaimed or requeued); stop working on it", claimID, jobID)
	}
	return Errorf(CodeConflict, "job %s changed while the request was handled; retry", jobID)
}
