package record

import (
	"strings"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/internal/col"
)

// JobSet renders a JobSet as the SET list of an UPDATE of the job's row (a
// job's claim is the store's own: each writes it its own way). arg takes
// the value of a parameter and returns its placeholder.
func JobSet(s *registry.JobSet, arg func(v any) string) string {
	sets := []string{"updated_at = " + arg(col.MS(s.Now))}
	add := func(col string, v any) { sets = append(sets, col+" = "+arg(v)) }
	if s.State != "" {
		add("state", string(s.State))
	}
	if s.AttemptIncrement {
		sets = append(sets, "attempt = attempt + 1")
	}
	if s.Reopen {
		sets = append(sets, "claim_id = NULL", "claimed_at = NULL", "claimed_by = NULL", "lease_seconds = 0",
			"last_activity_at = NULL", "phase = ''", "outcome = ''", "error = ''",
			"result = NULL", "finished_at = NULL", "visible_after = NULL")
	}
	if c := s.Claim; c != nil {
		add("claim_id", col.NullIfEmpty(c.ClaimID))
		add("claimed_at", col.MS(c.ClaimedAt))
		add("claimed_by", col.NullIfEmpty(c.ClaimedBy))
		add("lease_seconds", c.LeaseSeconds)
	}
	if !s.LastActivityAt.IsZero() {
		add("last_activity_at", col.MS(s.LastActivityAt))
	}
	if s.Phase != nil {
		add("phase", *s.Phase)
	}
	if s.Outcome != "" {
		add("outcome", string(s.Outcome))
	}
	if s.Error != nil {
		add("error", *s.Error)
	}
	if s.Result != nil {
		add("result", []byte(s.Result))
	}
	if !s.FinishedAt.IsZero() {
		add("finished_at", col.MS(s.FinishedAt))
	}
	if !s.ExpiresAt.IsZero() {
		add("expires_at", col.MS(s.ExpiresAt))
	}
	return strings.Join(sets, ", ")
}

// StoredPayload is the payload column: the sealed payload of a job whose
// cluster requires encrypted payloads, the plain one otherwise.
func StoredPayload(j *registry.Job) []byte {
	if j.PayloadSealed {
		return j.SealedPayload
	}
	return []byte(j.Payload)
}
