package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func testRetention(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod", registry.CapabilityLease)
	finish := func(outcome registry.Outcome) *registry.Job {
		j := e.submit(a.Cluster.ID, nil)
		claim, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		res := registry.ResultReport{Outcome: outcome}
		if outcome == registry.OutcomeFailed {
			res.Error = "boom"
		}
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, res)))
		return j
	}
	var oldOK, oldFailed []*registry.Job
	for range 5 {
		oldOK = append(oldOK, finish(registry.OutcomeSucceeded))
		oldFailed = append(oldFailed, finish(registry.OutcomeFailed))
	}
	e.clock.Advance(2 * time.Hour)
	recent := finish(registry.OutcomeSucceeded)
	open := e.submit(a.Cluster.ID, nil)

	// Succeeded jobs are kept an hour, failed ones three; audit an hour and
	// a half. Batches of two exercise the loop.
	ret := registry.NewRetention(e.reg, registry.RetentionConfig{
		Jobs: time.Hour, ByState: map[registry.JobState]time.Duration{registry.JobFailed: 3 * time.Hour},
		Audit: 90 * time.Minute, BatchSize: 2,
	})
	rep, err := ret.RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.Jobs != 5 {
		t.Fatalf("deleted %d jobs, want the 5 old succeeded ones", rep.Jobs)
	}
	for _, j := range oldOK {
		_, err := e.reg.GetJob(e.ctx, j.ID)
		wantCode(t, err, registry.CodeNotFound)
		if h, _ := e.store.JobHistory(e.ctx, j.ID); len(h) != 0 {
			t.Fatalf("job %s is gone but %d history entries stay", j.ID, len(h))
		}
	}
	for _, j := range append(oldFailed, recent, open) {
		e.job(j.ID) // still there
	}
	counts := e.counts(a.Cluster.ID)
	if counts[registry.JobSucceeded] != 1 || counts[registry.JobFailed] != 5 || counts[registry.JobQueued] != 1 {
		t.Fatalf("job counts after pruning: %v", counts)
	}
	if rep.Audit == 0 {
		t.Fatal("no audit entry older than 90 minutes was deleted")
	}
	for _, entry := range e.auditFor("") {
		if e.clock.Now().Sub(entry.At) > 90*time.Minute {
			t.Fatalf("audit entry %+v outlived its retention", entry)
		}
	}

	// Later, the failures go too; a negative retention keeps forever.
	e.clock.Advance(2 * time.Hour)
	rep, err = ret.RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.Jobs != 6 {
		t.Fatalf("second run deleted %d jobs, want 5 failed + 1 succeeded", rep.Jobs)
	}
	keep := registry.NewRetention(e.reg, registry.RetentionConfig{Jobs: -1, Audit: -1})
	e.clock.Advance(1000 * time.Hour)
	rep, err = keep.RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.Jobs != 0 || rep.Audit != 0 {
		t.Fatalf("keep-forever deleted %+v", rep)
	}
	if counts := e.counts(a.Cluster.ID); counts[registry.JobQueued] != 1 || counts[registry.JobSucceeded] != 0 || counts[registry.JobFailed] != 0 {
		t.Fatalf("job counts at the end: %v", counts)
	}
}

// testRetentionConcurrent: replicas' retention services running at once over
// one backlog delete every job once between them, and the job counts end at
// zero, never below.
func testRetentionConcurrent(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod", registry.CapabilityLease)
	const n = 20
	for range n {
		j := e.submit(a.Cluster.ID, nil)
		claim, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})))
	}
	e.clock.Advance(2 * time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := registry.NewRetention(e.reg, registry.RetentionConfig{Jobs: time.Hour, Audit: -1, BatchSize: 3}).RunOnce(e.ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += rep.Jobs
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != n {
		t.Fatalf("concurrent retention deleted %d jobs in all, want %d", total, n)
	}
	if counts := e.counts(a.Cluster.ID); counts[registry.JobSucceeded] != 0 {
		t.Fatalf("job counts after concurrent retention: %v", counts)
	}
}

// testSealedSecrets: the store tells whether anything sealed with the key
// file is kept (tether then never makes a new key next to it).
func testSealedSecrets(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	has := func() bool {
		ok, err := e.store.SealedSecretsExist(e.ctx)
		wantNoErr(t, err)
		return ok
	}
	e.agent("plain")
	if has() {
		t.Fatal("a registry without hmac credentials or webhooks reports sealed secrets")
	}
	a, _ := e.agent("signed", registry.CapabilityHMAC)
	if !has() {
		t.Fatal("an hmac credential's sealed key is not reported")
	}
	_, err := e.reg.RevokeCredentials(e.ctx, a.Cluster.ID, "")
	wantNoErr(t, err)
	if has() {
		t.Fatal("a revoked credential's key still counts")
	}
	_, _, err = e.reg.CreateWebhook(e.ctx, "hook", "https://example.com/x", []string{registry.WebhookJobFinished}, "")
	wantNoErr(t, err)
	if !has() {
		t.Fatal("a webhook's sealed secret is not reported")
	}
}

// testSignatures: a signature is new once, across every registry on the
// store, until it expires; concurrent records of one signature: one is new.
func testSignatures(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	now := e.clock.Now()
	key := []byte("a signature's key, 32 bytes long!")
	fresh, err := e.store.SignatureRecord(e.ctx, key, now.Add(5*time.Minute), now)
	wantNoErr(t, err)
	again, err := e.store.SignatureRecord(e.ctx, key, now.Add(5*time.Minute), now.Add(time.Minute))
	wantNoErr(t, err)
	if !fresh || again {
		t.Fatalf("first record fresh=%v, second fresh=%v; want true then false", fresh, again)
	}
	late, err := e.store.SignatureRecord(e.ctx, key, now.Add(20*time.Minute), now.Add(10*time.Minute))
	wantNoErr(t, err)
	if !late {
		t.Fatal("a signature remembered past its expiry still counts as seen")
	}
	n, err := e.store.SignaturesPrune(e.ctx, now.Add(time.Hour))
	wantNoErr(t, err)
	if n != 1 {
		t.Fatalf("pruned %d signatures, want 1", n)
	}
	const racers = 10
	results := make(chan bool, racers)
	var wg sync.WaitGroup
	for range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := e.store.SignatureRecord(e.ctx, []byte("raced"), now.Add(5*time.Minute), now)
			if err != nil {
				t.Errorf("SignatureRecord: %v", err)
			}
			results <- ok
		}()
	}
	wg.Wait()
	close(results)
	wins := 0
	for ok := range results {
		if ok {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d of %d concurrent records of one signature were new, want 1", wins, racers)
	}
}

// testAuditIDsAfterPrune: retention that deletes every audit entry (a quiet
// registry past a short --retain-audit) never makes the store hand out an id
// again: followers (tether audit --follow, the console, ?afterId=) ask for
// the entries after the last id they saw, and would never see the new ones.
func testAuditIDsAfterPrune(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	e.cluster("before", nil)
	seen := e.auditFor("")
	if len(seen) == 0 {
		t.Fatal("creating a cluster wrote no audit entry")
	}
	last := seen[0].ID // newest first
	e.clock.Advance(2 * time.Hour)
	_, err := registry.NewRetention(e.reg, registry.RetentionConfig{Jobs: -1, Audit: time.Hour}).RunOnce(e.ctx)
	wantNoErr(t, err)

	e.cluster("after", nil)
	after, err := e.reg.ListAudit(e.ctx, registry.AuditListParams{AfterID: last, Limit: 100})
	wantNoErr(t, err)
	if len(after) == 0 {
		all := e.auditFor("")
		t.Fatalf("a follower past audit entry %d sees none of the entries written after retention ran: %+v", last, all)
	}
	for _, entry := range e.auditFor("") {
		if entry.ID <= last && entry.Action == registry.AuditClusterCreate && entry.At.Equal(e.clock.Now()) {
			t.Fatalf("a new audit entry took id %d, at or below the last one seen before retention (%d)", entry.ID, last)
		}
	}
}

// testWebhookDeliveryRetention: deliveries that ended (delivered, or failed
// for good) go once older than their retention, batch by batch; pending
// ones stay however old, since they are still to be sent.
func testWebhookDeliveryRetention(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod")
	_, _, err := e.reg.CreateWebhook(e.ctx, "billing", "https://billing.example.com", []string{registry.WebhookJobFinished}, "")
	wantNoErr(t, err)
	finish := func(n int) {
		t.Helper()
		for range n {
			_, err := e.reg.CancelJob(e.ctx, e.submit(a.Cluster.ID, nil).ID, "")
			wantNoErr(t, err)
		}
	}
	// answer sends every due delivery once: a 2xx delivers it, anything
	// else leaves it pending or, past WebhookRetryFor, fails it for good.
	answer := func(status int) {
		t.Helper()
		due, err := e.reg.ClaimWebhookDeliveries(e.ctx, 100, time.Minute)
		wantNoErr(t, err)
		for i := range due {
			wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[i], status, ""))
		}
	}
	states := func() map[registry.DeliveryState]int {
		t.Helper()
		n := map[registry.DeliveryState]int{}
		for _, d := range e.deliveries("billing") {
			n[d.State]++
		}
		return n
	}

	finish(5)
	answer(200) // five delivered
	finish(3)
	e.clock.Advance(registry.WebhookRetryFor)
	answer(503) // three failed for good
	e.clock.Advance(2 * time.Hour)
	finish(1)
	answer(200) // one delivered, two hours before retention runs
	finish(2)   // two pending, never sent
	e.clock.Advance(2 * time.Hour)
	if got := states(); got[registry.DeliveryDelivered] != 6 || got[registry.DeliveryFailed] != 3 || got[registry.DeliveryPending] != 2 {
		t.Fatalf("deliveries before retention: %v, want 6 delivered, 3 failed and 2 pending", got)
	}

	rep, err := registry.NewRetention(e.reg, registry.RetentionConfig{Jobs: -1, Audit: -1, WebhookDeliveries: 3 * time.Hour, BatchSize: 2}).RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.WebhookDeliveries != 8 {
		t.Fatalf("retention deleted %d webhook deliveries, want the 5 delivered and 3 failed over 3 hours ago", rep.WebhookDeliveries)
	}
	if got := states(); got[registry.DeliveryDelivered] != 1 || got[registry.DeliveryFailed] != 0 || got[registry.DeliveryPending] != 2 {
		t.Fatalf("deliveries after retention: %v, want the one delivered 2 hours ago and the 2 pending", got)
	}

	e.clock.Advance(1000 * time.Hour)
	rep, err = registry.NewRetention(e.reg, registry.RetentionConfig{Jobs: -1, Audit: -1, WebhookDeliveries: -1}).RunOnce(e.ctx)
	wantNoErr(t, err)
	if rep.WebhookDeliveries != 0 {
		t.Fatalf("a negative retention deleted %d webhook deliveries", rep.WebhookDeliveries)
	}
}
