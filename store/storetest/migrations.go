package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// ClaimMigrationJobs are the jobs a store's test of migration 0017 (leases
// move to job_claim) writes at schema 16 before it opens the store: a job in
// progress whose lease ends at the time it chose, one in progress without a
// lease, and a finished one whose old lease column was left set.
const (
	ClaimMigrationLeased   = "j-leased"
	ClaimMigrationUnleased = "j-unleased"
	ClaimMigrationDone     = "j-done"
)

// CheckClaimMigration checks what migration 0017 owes those jobs once st
// opened the database: the leased job keeps its lease end and its claim, the
// others have no lease, and the reaper reclaims the leased job once its
// lease ended.
func CheckClaimMigration(t *testing.T, st registry.Store, leaseEnd time.Time) {
	t.Helper()
	ctx := context.Background()
	leased, err := st.JobGet(ctx, ClaimMigrationLeased)
	if err != nil {
		t.Fatal(err)
	}
	if !leased.LeaseExpiresAt.Equal(leaseEnd) || leased.ClaimID == "" || leased.LeaseSeconds == 0 {
		t.Fatalf("the leased job after the upgrade: lease %s (want %s), claim %q, %ds", leased.LeaseExpiresAt, leaseEnd, leased.ClaimID, leased.LeaseSeconds)
	}
	for _, id := range []string{ClaimMigrationUnleased, ClaimMigrationDone} {
		j, err := st.JobGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Leased() {
			t.Errorf("%s has a lease after the upgrade (%s)", id, j.LeaseExpiresAt)
		}
	}
	counts, err := st.JobsReclaim(ctx, registry.JobsReclaimParams{Now: leaseEnd.Add(time.Second), Limit: 10, Actor: "system:reaper"})
	if err != nil {
		t.Fatal(err)
	}
	if counts.Requeued != 1 {
		t.Fatalf("the reaper after the upgrade: %+v, want the leased job requeued", counts)
	}
	if j, err := st.JobGet(ctx, ClaimMigrationLeased); err != nil || j.State != registry.JobQueued || j.Leased() {
		t.Fatalf("after the reclaim: %+v, %v", j, err)
	}
}

// IdempotencyMigrationJobs are the jobs a store's test of migration 0020
// (idempotency keys kept for a window) writes at schema 19 before it opens
// the store, on cluster "cl-1", with their keys and their ages at the
// upgrade: an open job of three days ago, a job finished an hour ago, one of
// two days ago, and a key given to a failed job two hours ago and to its
// retry an hour ago.
var IdempotencyMigrationJobs = []struct {
	ID, Key, State string
	Age            time.Duration
}{
	{"j-open", "open", "queued", 72 * time.Hour},
	{"j-recent", "recent", "succeeded", time.Hour},
	{"j-old", "old", "succeeded", 48 * time.Hour},
	{"j-first", "retried", "failed", 2 * time.Hour},
	{"j-retry", "retried", "succeeded", time.Hour},
}

// CheckIdempotencyMigration checks what migration 0020 owes those jobs once
// st opened the database at now: the open job and the recent ones keep their
// keys (the newest job of a key answers it), the old one's key is free.
func CheckIdempotencyMigration(t *testing.T, st registry.Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	for i, c := range []struct{ key, want string }{
		{"open", "j-open"}, {"recent", "j-recent"}, {"retried", "j-retry"}, {"old", ""},
	} {
		id := fmt.Sprintf("j-new-%d", i)
		j, created, err := st.JobInsert(ctx, registry.JobInsertParams{
			Job: registry.Job{ID: id, ClusterID: "cl-1", Kind: registry.KindApply, Payload: json.RawMessage(`{}`), IdempotencyKey: c.key,
				State: registry.JobQueued, Attempt: 1, CreatedAt: now, UpdatedAt: now},
			History:  registry.JobHistoryEntry{At: now, Type: registry.HistorySubmitted, Actor: "admin:tester"},
			Audit:    registry.AuditEntry{At: now, Actor: "admin:tester", Action: registry.AuditJobSubmit, ClusterID: "cl-1", TargetKind: "job", TargetID: id},
			KeyUntil: now.Add(registry.DefaultIdempotencyRetention),
		})
		if err != nil {
			t.Fatalf("submission with key %q after the upgrade: %v", c.key, err)
		}
		switch {
		case c.want == "" && (!created || j.ID != id):
			t.Errorf("key %q after the upgrade answered job %s, want it free", c.key, j.ID)
		case c.want != "" && (created || j.ID != c.want):
			t.Errorf("key %q after the upgrade: created=%v job %s, want %s", c.key, created, j.ID, c.want)
		}
	}
}
