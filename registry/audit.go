package registry

import "time"

// Audit actions. Every change to security state or to a job's fate has one.
const (
	AuditClusterCreate    = "cluster.create"
	AuditClusterUpdate    = "cluster.update"
	AuditClusterDisable   = "cluster.disable"
	AuditClusterEnable    = "cluster.enable"
	AuditClusterDelete    = "cluster.delete"
	AuditTokenIssue       = "token.issue"
	AuditTokenRevoke      = "token.revoke"
	AuditRegister         = "agent.register"
	AuditRegisterFailed   = "agent.register_failed"
	AuditCredentialRotate = "credential.rotate"       // by the agent
	AuditCredentialForce  = "credential.force_rotate" // by an admin: rotation due now, expiry cut to the grace
	AuditCredentialRevoke = "credential.revoke"
	AuditJobSubmit        = "job.submit"
	AuditJobClaim         = "job.claim"
	AuditJobResult        = "job.result"
	AuditJobRequeue       = "job.requeue"
	AuditJobCancel        = "job.cancel"
	AuditJobExtendLease   = "job.extend_lease"
	AuditJobReclaim       = "job.reclaim" // one entry per reclaimed job, and one per reaper batch (target kind "jobs")
	AuditJobExpire        = "job.expire"  // one entry per expired job, and one per reaper batch (target kind "jobs")
)

// AuditEntry records who did what to which record and why. It never holds a
// secret: tokens appear by id only.
type AuditEntry struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	Actor      string    `json:"actor"`
	Action     string    `json:"action"`
	ClusterID  string    `json:"clusterId,omitempty"`
	TargetKind string    `json:"targetKind,omitempty"`
	TargetID   string    `json:"targetId,omitempty"`
	// Reason says why: an admin's stated reason, or the rule that applied
	// (for example why a registration was refused).
	Reason string `json:"reason,omitempty"`
}

// Subject names the record an entry is about that a reader can open: its
// job, cluster or rollout; an entry about something of a cluster's (a
// credential, a registration token) opens that cluster. ok is false when
// there is none (a key, the CA, an admin token outside any cluster).
func (a *AuditEntry) Subject() (kind, id string, ok bool) {
	switch a.TargetKind {
	case "job", "cluster", "rollout":
		if a.TargetID != "" {
			return a.TargetKind, a.TargetID, true
		}
	}
	if a.ClusterID != "" {
		return "cluster", a.ClusterID, true
	}
	return "", "", false
}
