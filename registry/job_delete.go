package registry

import (
	"context"
	"strings"
)

// AuditJobDelete is the audit action of DeleteJob.
const AuditJobDelete = "job.delete"

// JobDeleteParams says which job to delete, from which states, and the audit
// entry that records it.
type JobDeleteParams struct {
	ID string
	// States the job may be deleted from (terminal ones): a job in any other
	// state stays.
	States []JobState
	Audit  AuditEntry
}

// finishedStates are the states a job may be deleted from: every terminal
// one, so that nothing an agent may still work on disappears.
func finishedStates() []JobState {
	var out []JobState
	for _, s := range JobStates {
		if s.Terminal() {
			out = append(out, s)
		}
	}
	return out
}

// DeleteJob deletes a finished job (succeeded, failed, noop, conflict,
// canceled or expired) with its timeline, audited with the actor and the
// reason, in one atomic store operation that also tells watchers. A queued or
// in-progress job is refused with CodeJobNotFinished: cancel it first. A job
// that changed meanwhile (requeued after it was read) is refused the same way,
// never deleted from a state it was not deleted in. It returns the job as it
// was.
func (r *Registry) DeleteJob(ctx context.Context, id, reason string) (*Job, error) {
	if err := authorize(ctx, PermOperate); err != nil {
		return nil, err
	}
	j, err := r.getJob(ctx, id) // scoped: another organization's job is not found
	if err != nil {
		return nil, err
	}
	if !j.Deletable() {
		return nil, notFinished(j)
	}
	msg := "deleted " + string(j.State) + " job"
	if reason = strings.TrimSpace(reason); reason != "" {
		msg += ": " + reason
	}
	gone, deleted, err := r.store.JobDelete(ctx, JobDeleteParams{
		ID: j.ID, States: finishedStates(),
		Audit: r.auditEntry(ctx, AuditJobDelete, j.ClusterID, "job", j.ID, msg),
	})
	switch {
	case err != nil:
		if ErrorCode(err) == CodeNotFound {
			return nil, Errorf(CodeNotFound, "job %s no longer exists", j.ID)
		}
		return nil, err
	case !deleted:
		return nil, notFinished(gone)
	}
	return gone, nil
}

func notFinished(j *Job) error {
	return Errorf(CodeJobNotFinished, "job %s is %s: only finished jobs can be deleted; cancel it first (tether job cancel %s), then delete it", j.ID, describeState(j), j.ID)
}
