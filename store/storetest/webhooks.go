package storetest

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func (e *env) deliveries(name string) []registry.WebhookDelivery {
	e.t.Helper()
	_, ds, err := e.reg.WebhookDeliveries(e.ctx, name, 1000)
	if err != nil {
		e.t.Fatalf("WebhookDeliveries(%s): %v", name, err)
	}
	return ds
}

func testWebhooks(t *testing.T, newStore NewStore) {
	t.Run("SubscriptionsKeepTheirSecretSealed", func(t *testing.T) {
		e := newEnv(t, newStore)
		w, secret, err := e.reg.CreateWebhook(e.ctx, "billing", "https://hooks.example.com/tether", []string{"job.finished", "job.finished"}, "")
		wantNoErr(t, err)
		if !strings.HasPrefix(secret.Reveal(), "whsec_") || strings.Join(w.Events, ",") != "job.finished" {
			t.Fatalf("created %+v", w)
		}
		list, err := e.reg.ListWebhooks(e.ctx)
		wantNoErr(t, err)
		raw, _ := json.Marshal(list)
		audit, _ := json.Marshal(e.auditFor("webhook."))
		if len(list) != 1 || strings.Contains(string(list[0].SealedSecret)+string(raw)+string(audit), secret.Reveal()) {
			t.Fatal("the webhook secret is stored or shown in plain text")
		}
		_, _, err = e.reg.CreateWebhook(e.ctx, "billing", "https://x.example.com", []string{"job.finished"}, "")
		wantCode(t, err, registry.CodeConflict)
		for _, bad := range []struct{ url, event string }{{"ftp://x", "job.finished"}, {"https://u:p@x", "job.finished"}, {"https://x", "job.started"}} {
			_, _, err := e.reg.CreateWebhook(e.ctx, "other", bad.url, []string{bad.event}, "")
			wantCode(t, err, registry.CodeInvalid)
		}
		_, err = e.reg.DeleteWebhook(e.ctx, "billing")
		wantNoErr(t, err)
		_, err = e.reg.DeleteWebhook(e.ctx, "billing")
		wantCode(t, err, registry.CodeNotFound)
	})

	t.Run("DeliveryIDsAreNeverReused", func(t *testing.T) {
		// Receivers de-duplicate on the delivery's id (X-Tether-Delivery):
		// a subscription deleted and created again (to change its URL or
		// its secret) must not hand them ids they already processed.
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		cancel := func() {
			t.Helper()
			_, err := e.reg.CancelJob(e.ctx, e.submit(a.Cluster.ID, nil).ID, "")
			wantNoErr(t, err)
		}
		_, _, err := e.reg.CreateWebhook(e.ctx, "billing", "https://billing.example.com", []string{registry.WebhookJobFinished}, "")
		wantNoErr(t, err)
		cancel()
		cancel()
		var seen int64
		for _, d := range e.deliveries("billing") {
			seen = max(seen, d.ID)
		}
		_, err = e.reg.DeleteWebhook(e.ctx, "billing")
		wantNoErr(t, err)
		_, _, err = e.reg.CreateWebhook(e.ctx, "billing", "https://billing.example.com", []string{registry.WebhookJobFinished}, "")
		wantNoErr(t, err)
		cancel()
		ds := e.deliveries("billing")
		if len(ds) != 1 {
			t.Fatalf("%d deliveries of one finished job, want 1", len(ds))
		}
		if ds[0].ID <= seen {
			t.Fatalf("after the subscription was created again, its delivery took id %d, at or below %d, which the receiver already processed", ds[0].ID, seen)
		}
	})

	t.Run("OutboxRowsCommitWithTheirChange", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, _, err := e.reg.CreateWebhook(e.ctx, "jobs", "https://a.example.com", []string{registry.WebhookJobFinished}, "")
		wantNoErr(t, err)
		_, _, err = e.reg.CreateWebhook(e.ctx, "other-org", "https://b.example.com", []string{registry.WebhookJobFinished}, "elsewhere")
		wantNoErr(t, err)
		_, _, err = e.reg.CreateWebhook(e.ctx, "creds", "https://c.example.com", []string{registry.WebhookCredentialRevoked}, "")
		wantNoErr(t, err)
		a, _ := e.agent("prod", registry.CapabilityLease)

		canceled := e.submit(a.Cluster.ID, nil)
		_, err = e.reg.CancelJob(e.ctx, canceled.ID, "")
		wantNoErr(t, err)
		done := e.submit(a.Cluster.ID, nil)
		claim, err := e.reg.AckJob(e.ctx, a, done.ID)
		wantNoErr(t, err)
		wantNoErr(t, e.reg.ReportStatus(e.ctx, a, done.ID, claim.ClaimID, registry.StatusReport{Phase: "Applying"}))
		wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, done.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "boom"})))
		expiring := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.ExpiresIn = time.Minute })
		e.clock.Advance(2 * time.Minute)
		_, err = registry.NewReaper(e.reg, registry.ReaperConfig{}).RunOnce(e.ctx)
		wantNoErr(t, err)

		ds := e.deliveries("jobs")
		got := map[string]string{}
		for _, d := range ds {
			var data struct {
				ID, State, Error string
				Target           struct{ Namespace string }
			}
			if err := json.Unmarshal(d.Data, &data); err != nil {
				t.Fatalf("delivery data %s: %v", d.Data, err)
			}
			if d.Event != "job.finished" || d.SubjectID != data.ID || d.State != registry.DeliveryPending || data.Target.Namespace != "team-a" {
				t.Fatalf("delivery %+v data %s", d, d.Data)
			}
			got[data.ID] = data.State + ":" + data.Error
		}
		want := map[string]string{canceled.ID: "canceled:canceled", done.ID: "failed:boom", expiring.ID: "expired:expired"}
		if len(got) != 3 || got[canceled.ID] != want[canceled.ID] || got[done.ID] != want[done.ID] || !strings.HasPrefix(got[expiring.ID], "expired") {
			t.Fatalf("deliveries %v, want one per finished job %v (a status report is not an end)", got, want)
		}
		if n := len(e.deliveries("other-org")); n != 0 {
			t.Fatalf("a webhook of another organization got %d deliveries", n)
		}
		if n := len(e.deliveries("creds")); n != 0 {
			t.Fatalf("a credential webhook got %d job deliveries", n)
		}
		_, err = e.reg.RevokeCredentials(e.ctx, "prod", "leaked")
		wantNoErr(t, err)
		if ds := e.deliveries("creds"); len(ds) != 1 || !strings.Contains(string(ds[0].Data), "leaked") {
			t.Fatalf("credential deliveries %+v", ds)
		}
	})

	t.Run("RolloutEnds", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, _, err := e.reg.CreateWebhook(e.ctx, "rollouts", "https://a.example.com", []string{registry.WebhookRolloutHalted, registry.WebhookRolloutCompleted}, "")
		wantNoErr(t, err)
		agents := e.fleet(2, nil)
		ro := e.rollout(registry.RolloutSpec{MaxParallel: 2})
		e.finish(agents["c01"], ro.Targets[0].JobID, registry.OutcomeFailed)
		e.advance(ro.ID)
		ds := e.deliveries("rollouts")
		var data struct {
			Name    string
			Targets map[string]int
		}
		if len(ds) != 1 || ds[0].Event != "rollout.halted" || json.Unmarshal(ds[0].Data, &data) != nil || data.Targets["failed"] != 1 || data.Name != ro.Name {
			t.Fatalf("deliveries %+v", ds)
		}
	})

	t.Run("ClaimsAreExclusiveAndRetriesBackOff", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, _, err := e.reg.CreateWebhook(e.ctx, "jobs", "https://a.example.com", []string{registry.WebhookJobFinished}, "")
		wantNoErr(t, err)
		a, _ := e.agent("prod")
		for range 20 {
			j := e.submit(a.Cluster.ID, nil)
			_, err := e.reg.CancelJob(e.ctx, j.ID, "")
			wantNoErr(t, err)
		}
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					due, err := e.reg.ClaimWebhookDeliveries(e.ctx, 3, time.Minute)
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					if len(due) == 0 {
						return
					}
					mu.Lock()
					for _, d := range due {
						seen[d.ID]++
						if d.Secret.Reveal() == "" || d.URL != "https://a.example.com" {
							t.Errorf("claimed %+v without its URL or secret", d.WebhookDelivery)
						}
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != 20 {
			t.Fatalf("claimed %d distinct deliveries, want 20", len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("delivery %d claimed %d times while its claim held", id, n)
			}
		}

		// One delivery through failures, a success, and another to give-up.
		e.clock.Advance(time.Minute)
		due, err := e.reg.ClaimWebhookDeliveries(e.ctx, 2, time.Minute)
		wantNoErr(t, err)
		if len(due) != 2 || due[0].Attempts != 2 {
			t.Fatalf("after the claim ran out: %d due, attempts %d (a claim that runs out is retried)", len(due), due[0].Attempts)
		}
		wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[0], 503, "the receiver answered 503"))
		wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[1], 200, ""))
		stale := due[0]
		wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &stale, 200, "")) // a second record of one attempt changes nothing
		byID := map[int64]registry.WebhookDelivery{}
		for _, d := range e.deliveries("jobs") {
			byID[d.ID] = d
		}
		failed, ok := byID[due[0].ID], byID[due[1].ID]
		if failed.State != registry.DeliveryPending || failed.LastStatus != 503 || !strings.Contains(failed.LastError, "503") {
			t.Fatalf("after a 503: %+v", failed)
		}
		// Backoff after the second attempt: 10 s ± 50 %.
		if wait := failed.NextAt.Sub(e.clock.Now()); wait < 5*time.Second || wait > 15*time.Second {
			t.Fatalf("next attempt in %s, want 5s to 15s", wait)
		}
		if ok.State != registry.DeliveryDelivered || ok.FinishedAt.IsZero() {
			t.Fatalf("after a 200: %+v", ok)
		}
		e.clock.Advance(registry.WebhookRetryFor)
		due, err = e.reg.ClaimWebhookDeliveries(e.ctx, 100, time.Minute)
		wantNoErr(t, err)
		for i := range due {
			wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[i], 0, "connection refused"))
		}
		if d := e.deliveries("jobs"); d[len(d)-1].State != registry.DeliveryFailed && byIDState(d, failed.ID) != registry.DeliveryFailed {
			t.Fatalf("a delivery still failing after %s is not given up", registry.WebhookRetryFor)
		}
	})
}

func byIDState(ds []registry.WebhookDelivery, id int64) registry.DeliveryState {
	for _, d := range ds {
		if d.ID == id {
			return d.State
		}
	}
	return ""
}
