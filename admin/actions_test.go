package admin_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// TestRemoteActsAsLocal: every change the Service offers, made over the
// admin API or on the registry, answers the record as the other one then
// reads it (nothing lost on the way), and a refusal is the same code and
// message both ways. The two implementations take turns, each acting on
// what the other made.
func TestRemoteActsAsLocal(t *testing.T) {
	w := newWorld(t)
	f := seed(t, w)
	ctx := context.Background()
	local, remote := admin.Service(w.local), admin.Service(w.remote)
	// answers: what an action answered is what the other side reads.
	answers := func(what string, got any, err error, read func() (any, error)) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want, rerr := read()
		same(t, what, want, got, rerr, nil)
	}
	// refused: both sides refuse the call alike.
	refused := func(what string, call func(s admin.Service) error) {
		t.Helper()
		lerr, rerr := call(local), call(remote)
		if lerr == nil {
			t.Errorf("%s: not refused", what)
		}
		same(t, what, nil, nil, lerr, rerr)
	}

	// Clusters: every spec field travels.
	spec := registry.ClusterSpec{Name: "edge", Organization: "acme", Labels: registry.Labels{"env": "edge"}, PublicKey: x25519(t),
		AllowedNamespaces: []string{"lab"}, AllowedCatalogEntries: []string{"redis"}, AllowedOperationTemplates: []string{"restore.velero"},
		Mode: registry.ModePull, Policy: registry.Policy{LeaseSeconds: 120, MaxAttempts: 4, RequiredCapabilities: []string{registry.CapabilityLease},
			RequireClientCertificate: true, RequireSignedPayloads: true, AllowLegacyPayloadSignatures: true, RequireEncryptedPayloads: true}}
	edge, tok, err := remote.CreateCluster(ctx, spec, 2*time.Hour)
	answers("a cluster created", edge, err, func() (any, error) { return local.GetCluster(ctx, "edge") })
	if s, _ := json.Marshal(edge.ClusterSpec); string(s) != string(must[[]byte](t)(json.Marshal(spec))) {
		t.Errorf("the created cluster's spec is not the one asked for:\n%s", s)
	}
	if tok.Secret.Reveal() == "" || tok.Token.ClusterID != edge.ID || !tok.Token.ExpiresAt.Equal(w.clock.Now().Add(2*time.Hour)) {
		t.Errorf("the first registration token: %+v", tok.Token)
	}
	refused("a cluster's name taken", func(s admin.Service) error { _, _, err := s.CreateCluster(ctx, spec, 0); return err })
	edited := edge.ClusterSpec
	edited.Labels = registry.Labels{"env": "edge", "tier": "2"}
	edited.AllowedNamespaces = nil
	c, err := local.UpdateCluster(ctx, edge.ID, edge.Version, edited)
	answers("a cluster updated", c, err, func() (any, error) { return remote.GetCluster(ctx, edge.ID) })
	refused("a stale update", func(s admin.Service) error { _, err := s.UpdateCluster(ctx, edge.ID, edge.Version, edited); return err })
	c, err = remote.ModifyCluster(ctx, "edge", func(s *registry.ClusterSpec) error { s.AllowedNamespaces = []string{"lab", "ops"}; return nil })
	answers("a cluster modified", c, err, func() (any, error) { return local.GetCluster(ctx, "edge") })
	c, err = remote.SetClusterPaused(ctx, "edge", true, "maintenance")
	answers("a cluster paused", c, err, func() (any, error) { return local.GetCluster(ctx, "edge") })
	c, err = local.SetClusterPaused(ctx, "edge", false, "done")
	answers("a cluster resumed", c, err, func() (any, error) { return remote.GetCluster(ctx, "edge") })
	c, err = local.SetClusterEnabled(ctx, "edge", false, "drill")
	answers("a cluster disabled", c, err, func() (any, error) { return remote.GetCluster(ctx, "edge") })
	c, err = remote.SetClusterEnabled(ctx, "edge", true, "drill over")
	answers("a cluster enabled", c, err, func() (any, error) { return local.GetCluster(ctx, "edge") })
	k1, err := remote.RotateSigningKey(ctx, "prod-eu", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := local.RotateSigningKey(ctx, "prod-eu", time.Hour)
	if err != nil || k2.EndorsedBy != k1.ID || k1.ClusterID != f.eu.ID || len(k1.PublicKey) == 0 {
		t.Errorf("signing keys: over the API %+v, then locally %+v (%v); the second should be endorsed by the first", k1, k2, err)
	}

	// Tokens, credentials, admin tokens, the CA.
	it, err := remote.IssueToken(ctx, "edge", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := remote.RevokeToken(ctx, it.Secret.Reveal(), "leaked")
	answers("a token revoked by its secret", rt, err, func() (any, error) {
		toks, err := local.ListTokens(ctx, "edge")
		for _, t := range toks {
			if t.ID == it.Token.ID {
				return t, err
			}
		}
		return nil, err
	})
	refused("a token revoked twice", func(s admin.Service) error { _, err := s.RevokeToken(ctx, it.Token.ID, ""); return err })
	refused("a token for no cluster", func(s admin.Service) error { _, err := s.IssueToken(ctx, "nowhere", 0); return err })
	lf, lerr := local.ForceRotation(ctx, "prod-eu", "drill")
	rf, rerr := remote.ForceRotation(ctx, "prod-eu", "drill")
	if lerr != nil || rerr != nil || rf.Credentials != lf.Credentials || rf.Grace != lf.Grace || rf.Warning != lf.Warning || !rf.GraceUntil.Equal(lf.GraceUntil) {
		t.Errorf("forced rotation: locally %+v (%v), over the API %+v (%v)", lf, lerr, rf, rerr)
	}
	if n, err := remote.RevokeCredentials(ctx, "prod-eu", "drill"); err != nil || n != 1 {
		t.Errorf("revoked %d credentials (%v), want the agent's 1", n, err)
	}
	// The API's answer to a created admin token has no createdAt or
	// createdBy (as before this package): the rest must match.
	at, err := remote.IssueAdminToken(ctx, registry.AdminTokenSpec{Name: "ci", Role: registry.RoleOperator, Org: "acme", TTL: 24 * time.Hour})
	answers("an admin token created", at.Token, err, func() (any, error) {
		list, err := local.ListAdminTokens(ctx)
		for _, t := range list {
			if t.ID == at.Token.ID {
				t.CreatedAt, t.CreatedBy = time.Time{}, ""
				return t, err
			}
		}
		return nil, err
	})
	if at.Secret.Reveal() == "" {
		t.Error("the admin token's secret is not answered")
	}
	revoked, err := local.RevokeAdminToken(ctx, "ci", "rotated")
	answers("an admin token revoked", revoked, err, func() (any, error) {
		list, err := remote.ListAdminTokens(ctx)
		for _, t := range list {
			if t.ID == at.Token.ID {
				return t, err
			}
		}
		return nil, err
	})
	refused("a second CA", func(s admin.Service) error { _, err := s.InitCA(ctx, false); return err })
	ca, err := remote.InitCA(ctx, true)
	answers("a CA replaced", ca, err, func() (any, error) { cas, err := local.CAs(ctx); return cas[0], err })
	if len(ca.CertDER) == 0 {
		t.Error("the new CA's certificate is not answered")
	}

	// Jobs.
	sub := registry.JobSubmission{ClusterID: "staging", Kind: registry.KindApply, Payload: configMap("apps", "idem"), IdempotencyKey: "deploy-1"}
	j, created, err := remote.SubmitJob(ctx, sub)
	if !created {
		t.Error("a new job submitted over the API says it was not created")
	}
	answers("a job submitted", j, err, func() (any, error) { return local.GetJob(ctx, j.ID) })
	again, created, err := local.SubmitJob(ctx, sub)
	if created || err != nil || again.ID != j.ID {
		t.Errorf("the same idempotency key locally: job %v created %v (%v), want %s again", again, created, err, j.ID)
	}
	if _, created, err := remote.SubmitJob(ctx, sub); created || err != nil {
		t.Errorf("the same idempotency key over the API: created %v (%v), want the job answered again", created, err)
	}
	refused("a namespace not allowed", func(s admin.Service) error {
		_, _, err := s.SubmitJob(ctx, registry.JobSubmission{ClusterID: "staging", Kind: registry.KindApply, Payload: configMap("kube-system", "x")})
		return err
	})
	refused("a payload that is not JSON", func(s admin.Service) error {
		_, _, err := s.SubmitJob(ctx, registry.JobSubmission{ClusterID: "staging", Kind: registry.KindApply, Payload: []byte("kind: ConfigMap")})
		return err
	})
	refused("an open job deleted", func(s admin.Service) error { _, err := s.DeleteJob(ctx, j.ID, ""); return err })
	refused("an open job retried", func(s admin.Service) error { _, err := s.RetryJob(ctx, j.ID, ""); return err })
	refused("no lease to extend", func(s admin.Service) error { _, err := s.ExtendLease(ctx, j.ID, time.Minute); return err })
	lj, err := remote.ExtendLease(ctx, f.leased.ID, 10*time.Minute)
	answers("a lease extended", lj, err, func() (any, error) { return local.GetJob(ctx, f.leased.ID) })
	cj, err := remote.CancelJob(ctx, j.ID, "not now")
	answers("a job canceled", cj, err, func() (any, error) { return local.GetJob(ctx, j.ID) })
	rj, err := local.RetryJob(ctx, j.ID, "now")
	answers("a job retried", rj, err, func() (any, error) { return remote.GetJob(ctx, rj.ID) })
	held, err := local.GetJob(ctx, f.leased.ID)
	if err != nil {
		t.Fatal(err)
	}
	refused("a requeue of an attempt the job is not at", func(s admin.Service) error {
		_, err := s.RequeueJobWith(ctx, f.leased.ID, registry.RequeueOptions{Attempt: held.Attempt + 1})
		return err
	})
	qj, err := remote.RequeueJobWith(ctx, f.leased.ID, registry.RequeueOptions{Reason: "agent gone", ExtendExpiry: time.Hour, Attempt: held.Attempt})
	answers("a job requeued", qj, err, func() (any, error) { return local.GetJob(ctx, f.leased.ID) })
	refused("a queued job requeued", func(s admin.Service) error { _, err := s.RequeueJob(ctx, f.leased.ID, ""); return err })
	before, _ := local.GetJob(ctx, f.canceled.ID)
	dj, err := remote.DeleteJob(ctx, f.canceled.ID, "tidy")
	answers("a job deleted", dj, err, func() (any, error) { return before, nil })
	refused("a deleted job", func(s admin.Service) error { _, err := s.GetJob(ctx, f.canceled.ID); return err })

	// Rollouts.
	rspec := registry.RolloutSpec{Name: "wave-2", Selector: "env=prod", Kind: registry.KindApply, Payload: configMap("apps", "w2"),
		MaxParallel: 2, MaxFailures: 1, PauseBetween: time.Minute}
	dry, err := local.CreateRollout(ctx, registry.RolloutSpec{Name: "plan", Selector: "env=prod", Kind: registry.KindApply, Payload: configMap("apps", "p"), DryRun: true})
	rdry, rerr := remote.CreateRollout(ctx, registry.RolloutSpec{Name: "plan", Selector: "env=prod", Kind: registry.KindApply, Payload: configMap("apps", "p"), DryRun: true})
	if err != nil || rerr != nil || len(dry.Targets) != len(rdry.Targets) || dry.State != rdry.State {
		t.Errorf("a dry run: locally %+v (%v), over the API %+v (%v)", dry, err, rdry, rerr)
	}
	ro, err := remote.CreateRollout(ctx, rspec)
	answers("a rollout created", ro, err, func() (any, error) { return local.GetRollout(ctx, ro.ID) })
	ro, err = remote.PauseRollout(ctx, "wave-2", "hold")
	answers("a rollout paused", ro, err, func() (any, error) { return local.GetRollout(ctx, ro.ID) })
	ro, err = admin.RolloutAction(ctx, local, "wave-2", "resume", "go")
	answers("a rollout resumed", ro, err, func() (any, error) { return remote.GetRollout(ctx, ro.ID) })
	ro, err = remote.StepRollout(ctx, ro.ID)
	answers("a rollout stepped over the API (read)", ro, err, func() (any, error) { return local.GetRollout(ctx, ro.ID) })
	ro, err = admin.RolloutAction(ctx, remote, "wave-2", "abort", "stop")
	answers("a rollout aborted", ro, err, func() (any, error) { return local.GetRollout(ctx, ro.ID) })
	refused("an aborted rollout resumed", func(s admin.Service) error { _, err := s.ResumeRollout(ctx, "wave-2", ""); return err })
	refused("a rollout action unknown", func(s admin.Service) error {
		_, err := admin.RolloutAction(ctx, s, "wave-2", "rewind", "")
		return err
	})

	// Webhooks.
	wh, secret, err := remote.CreateWebhook(ctx, "alerts", "https://hooks.example.com/alerts", []string{"rollout.halted"}, "acme")
	answers("a webhook created", wh, err, func() (any, error) { return local.GetWebhook(ctx, "alerts") })
	if secret.Reveal() == "" {
		t.Error("the webhook's secret is not answered")
	}
	name := "alerts-2"
	wh, err = local.UpdateWebhook(ctx, "alerts", wh.Version, registry.WebhookEdit{Name: &name})
	answers("a webhook renamed", wh, err, func() (any, error) { return remote.GetWebhook(ctx, wh.ID) })
	refused("a stale webhook edit", func(s admin.Service) error {
		_, err := s.UpdateWebhook(ctx, wh.ID, wh.Version-1, registry.WebhookEdit{Name: &name})
		return err
	})
	for _, s := range []admin.Service{remote, local} {
		rw, sec, err := s.RotateWebhookSecret(ctx, wh.ID, 0)
		if err != nil || sec.Reveal() == "" || !rw.PreviousSecretUntil.IsZero() {
			t.Errorf("a secret rotated with no overlap retires the previous one at once: %+v (%v)", rw, err)
		}
	}
	d, err := remote.SendTestWebhook(ctx, wh.ID)
	answers("a test delivery", d, err, func() (any, error) { d, _, err := local.GetWebhookDelivery(ctx, d.DeliveryID()); return d, err })
	refused("a pending delivery redelivered", func(s admin.Service) error { _, err := s.RedeliverWebhook(ctx, d.DeliveryID()); return err })
	gone, err := local.DeleteWebhook(ctx, wh.ID)
	if err != nil || gone.ID != wh.ID {
		t.Errorf("webhook deleted: %+v (%v)", gone, err)
	}
	refused("a deleted webhook", func(s admin.Service) error { _, err := s.GetWebhook(ctx, wh.ID); return err })

	// Who did what: the token over the API, the admin locally.
	trail, err := local.ListAudit(ctx, registry.AuditListParams{Action: "cluster.", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	actors := map[string]string{}
	for _, e := range trail {
		if e.TargetID == edge.ID {
			actors[e.Action] = e.Actor
		}
	}
	if a := actors["cluster.create"]; a != w.remote.Actor || a == "admin:alice" {
		t.Errorf("the cluster created over the API is attributed to %q, want the token", a)
	}
	if a := actors["cluster.disable"]; a != "admin:alice" {
		t.Errorf("the cluster disabled locally is attributed to %q, want admin:alice", a)
	}
}
