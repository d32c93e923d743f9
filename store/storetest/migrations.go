package storetest

import (
	"context"
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
