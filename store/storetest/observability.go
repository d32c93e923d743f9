package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// testObservability: what the server's metrics and traces read from the
// store: a job's trace context through its life, the times an agent's ack
// and result return, and the count of pending webhook deliveries.
func testObservability(t *testing.T, newStore NewStore) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	t.Run("TraceparentTravelsWithTheJob", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		submitted := e.clock.Now()
		j := e.submit(a.Cluster.ID, func(s *registry.JobSubmission) { s.Traceparent = tp })
		if j.Traceparent != tp || e.job(j.ID).Traceparent != tp {
			t.Fatalf("traceparent = %q as submitted, %q as read; want %q", j.Traceparent, e.job(j.ID).Traceparent, tp)
		}
		polled, err := e.reg.PollJobs(e.ctx, a, a.Cluster.ID, 10)
		wantNoErr(t, err)
		if len(polled) != 1 || polled[0].Traceparent != tp {
			t.Fatalf("polled %+v, want the job with its traceparent", polled)
		}
		e.clock.Advance(7 * time.Second)
		claim, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		if c := claim.Job; c == nil || c.Traceparent != tp || !c.CreatedAt.Equal(submitted) || c.Attempt != 1 || !c.ClaimedAt.Equal(e.clock.Now()) {
			t.Fatalf("ack returned %+v; want traceparent %s, created at %v, attempt 1, claimed at %v", c, tp, submitted, e.clock.Now())
		}
		acked := e.clock.Now()
		e.clock.Advance(90 * time.Second)
		done, err := e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})
		wantNoErr(t, err)
		if done.Traceparent != tp || !done.ClaimedAt.Equal(acked) || !done.CreatedAt.Equal(submitted) || done.Kind != registry.KindApply {
			t.Fatalf("result returned %+v; want traceparent %s, claimed at %v, created at %v, kind apply", done, tp, acked, submitted)
		}
		// A job submitted untraced has none.
		if u := e.submit(a.Cluster.ID, nil); e.job(u.ID).Traceparent != "" {
			t.Fatalf("untraced job's traceparent = %q", e.job(u.ID).Traceparent)
		}
	})

	t.Run("MalformedTraceparentIsRefused", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		_, _, err := e.reg.SubmitJob(e.ctx, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply,
			Payload: json.RawMessage(applyPayload), Traceparent: "00-zz-00f067aa0ba902b7-01"})
		wantCode(t, err, registry.CodeInvalid)
	})

	t.Run("PendingWebhookDeliveries", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		pending := func() int64 {
			t.Helper()
			n, err := e.reg.PendingWebhookDeliveries(e.ctx)
			wantNoErr(t, err)
			return n
		}
		if n := pending(); n != 0 {
			t.Fatalf("pending = %d with no webhook", n)
		}
		_, _, err := e.reg.CreateWebhook(e.ctx, "billing", "https://billing.example.com", []string{registry.WebhookJobFinished}, "")
		wantNoErr(t, err)
		for range 3 {
			_, err := e.reg.CancelJob(e.ctx, e.submit(c.ID, nil).ID, "")
			wantNoErr(t, err)
		}
		if n := pending(); n != 3 {
			t.Fatalf("pending = %d after three finished jobs, want 3", n)
		}
		// A failed attempt leaves it pending; a delivered one ends it.
		due, err := e.reg.ClaimWebhookDeliveries(e.ctx, 2, time.Minute)
		wantNoErr(t, err)
		if len(due) != 2 {
			t.Fatalf("claimed %d deliveries, want 2", len(due))
		}
		wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[0], 0, "connection refused"))
		wantNoErr(t, e.reg.RecordWebhookAttempt(e.ctx, &due[1], 204, ""))
		if n := pending(); n != 2 {
			t.Fatalf("pending = %d after one delivery of three, want 2", n)
		}
		scoped := registry.WithActor(e.ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "acme-admin", Org: "acme"})
		_, err = e.reg.PendingWebhookDeliveries(scoped)
		wantCode(t, err, registry.CodeForbidden)
	})
}
