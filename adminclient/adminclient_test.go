package adminclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

// serve runs a real tether server on 127.0.0.1 over a SQLite file and
// returns its registry and URL.
func serve(t *testing.T) (*registry.Registry, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "key"))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = server.New(reg, server.Config{Logger: slog.New(slog.DiscardHandler), ShutdownTimeout: time.Second}).Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		reg.Close()
		st.Close()
	})
	return reg, "http://" + ln.Addr().String()
}

func token(t *testing.T, reg *registry.Registry, role registry.Role) string {
	t.Helper()
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	issued, err := reg.CreateAdminToken(admin, string(role)+"-token", role, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return issued.Secret.Reveal()
}

// TestRetryLinks: a retried job names its retry (RetriedBy), and the retry
// names it (RetryOf), so that a client need not retry it twice.
func TestRetryLinks(t *testing.T) {
	reg, url := serve(t)
	ctx := context.Background()
	c, err := adminclient.New(url, token(t, reg, registry.RoleAdmin))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateCluster(ctx, adminclient.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"apps"}}, time.Hour); err != nil {
		t.Fatal(err)
	}
	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"apps"}}`)
	job, err := c.SubmitJob(ctx, adminclient.Submission{Cluster: "prod", Kind: "apply", Payload: payload}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelJob(ctx, job.ID, "wrong one"); err != nil {
		t.Fatal(err)
	}
	retry, err := c.RetryJob(ctx, job.ID, "right one after all")
	if err != nil || retry.RetryOf != job.ID || retry.State != "queued" {
		t.Fatalf("RetryJob = %+v %v", retry, err)
	}
	orig, err := c.GetJob(ctx, job.ID, 0)
	if err != nil || len(orig.RetriedBy) != 1 || orig.RetriedBy[0] != retry.ID {
		t.Fatalf("the original's RetriedBy = %v (%v), want [%s]", orig.RetriedBy, err, retry.ID)
	}
}

func TestProducerFlow(t *testing.T) {
	reg, url := serve(t)
	ctx := context.Background()
	c, err := adminclient.New(url, token(t, reg, registry.RoleAdmin))
	if err != nil {
		t.Fatal(err)
	}
	cl, tok, err := c.CreateCluster(ctx, adminclient.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"apps"}, Labels: map[string]string{"env": "prod"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Version != 1 || tok.Token == "" || cl.Policy.LeaseSeconds != registry.DefaultLeaseSeconds {
		t.Fatalf("created %+v token %+v", cl, tok)
	}
	// An agent registers and finishes whatever it gets.
	cred, err := reg.Register(ctx, registry.RegisterParams{Token: tok.Token})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := reg.Authenticate(ctx, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ctx.Err() == nil {
			jobs, _ := reg.PollJobs(ctx, agent, agent.Cluster.ID, 10)
			for _, j := range jobs {
				if claim, err := reg.AckJob(ctx, agent, j.ID); err == nil {
					_, _ = reg.ReportResult(ctx, agent, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeSucceeded})
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	payload := json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"apps"}}`)
	job, err := c.SubmitJob(ctx, adminclient.Submission{Cluster: "prod", Kind: "apply", Payload: payload, IdempotencyKey: "deploy-1"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !job.Terminal() || !job.Succeeded() || job.Replayed {
		t.Fatalf("blocking submit answered %+v", job)
	}
	detail, err := c.GetJob(ctx, job.ID, 0)
	if err != nil || len(detail.Timeline) < 3 || detail.Target.Name != "c" {
		t.Fatalf("job detail %+v %v", detail, err)
	}

	_, err = c.SubmitJob(ctx, adminclient.Submission{Cluster: "prod", Kind: "apply",
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"kube-system"}}`)}, 0)
	var apiErr *adminclient.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 422 || apiErr.Code != "namespace_not_allowed" || apiErr.RequestID == "" {
		t.Fatalf("policy refusal = %v", err)
	}

	// A stale version is a conflict; the right one applies.
	if _, err := c.UpdateCluster(ctx, "prod", 1, map[string]any{"allowedNamespaces": []string{"apps", "web"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateCluster(ctx, "prod", 1, map[string]any{"mode": "push"}); !adminclient.IsCode(err, "conflict") {
		t.Fatalf("stale update = %v, want conflict", err)
	}

	page, err := c.ListJobs(ctx, adminclient.JobQuery{Clusters: []string{"prod"}, States: []string{"succeeded"}, Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != job.ID {
		t.Fatalf("ListJobs = %+v %v", page, err)
	}
	ro, err := c.CreateRollout(ctx, adminclient.RolloutSpec{Selector: "env=prod", Kind: "apply", Payload: payload, DryRun: true})
	if err != nil || len(ro.Targets) != 1 || ro.Targets[0].ClusterName != "prod" {
		t.Fatalf("rollout dry run = %+v %v", ro, err)
	}
	stats, err := c.Stats(ctx)
	if err != nil || stats.Jobs["succeeded"] != 1 {
		t.Fatalf("stats = %+v %v", stats, err)
	}
	q, err := c.ClusterQueue(ctx, "prod")
	if err != nil || q.Finished != 1 || q.FailureRate == nil || *q.FailureRate != 0 || q.WaitSamples != 1 || q.NotDraining {
		t.Fatalf("queue of prod = %+v %v", q, err)
	}
	if queues, err := c.Queues(ctx); err != nil || len(queues) != 1 || queues[0].ClusterID != q.ClusterID {
		t.Fatalf("queues = %+v %v", queues, err)
	}
	audit, err := c.ListAudit(ctx, "", "job.submit", 10, "")
	if err != nil || len(audit.Items) != 1 || audit.Items[0].Actor != "admin-token:admin-token" {
		t.Fatalf("audit = %+v %v", audit, err)
	}
	gone, err := c.DeleteJob(ctx, job.ID, "done with it")
	if err != nil || gone.ID != job.ID || !gone.Succeeded() {
		t.Fatalf("DeleteJob = %+v %v", gone, err)
	}
	if _, err := c.DeleteJob(ctx, job.ID, ""); !adminclient.IsCode(err, "not_found") {
		t.Fatalf("DeleteJob of a deleted job = %v, want not_found", err)
	}
}

func TestRefusals(t *testing.T) {
	reg, url := serve(t)
	ctx := context.Background()
	viewer, _ := adminclient.New(url, token(t, reg, registry.RoleViewer))
	if _, _, err := viewer.CreateCluster(ctx, adminclient.ClusterSpec{Name: "x"}, 0); !adminclient.IsCode(err, "forbidden") {
		t.Fatalf("viewer creating a cluster = %v, want forbidden", err)
	}
	if _, err := viewer.GetCluster(ctx, "nowhere"); !adminclient.IsCode(err, "not_found") {
		t.Fatalf("missing cluster = %v", err)
	}
	bad, _ := adminclient.New(url, "tether_adm_nonsense")
	_, err := bad.Stats(ctx)
	if !adminclient.IsCode(err, "unauthorized") {
		t.Fatalf("bad token = %v", err)
	}
	// A refusal that asking again will not change ends a watch; a rate
	// limit or a server out of reach is tried again.
	if !adminclient.IsRefused(err) {
		t.Errorf("a bad token is not final: %v", err)
	}
	if adminclient.IsRefused(&adminclient.Error{StatusCode: http.StatusTooManyRequests, Code: "rate_limited"}) {
		t.Error("a rate limit is final")
	}
	gone, _ := adminclient.New("http://127.0.0.1:1", "t")
	if _, err := gone.Stats(ctx); err == nil || adminclient.IsRefused(err) {
		t.Errorf("a server out of reach = %v, final", err)
	}
	if _, err := adminclient.New("ftp://x", "t"); err == nil {
		t.Fatal("an ftp URL was accepted")
	}
}

// A token revoked through the client cannot register; a key rotated through
// it is the one the cluster's agents now verify with.
func TestRevokeTokenAndRotateSigningKey(t *testing.T) {
	reg, url := serve(t)
	ctx := context.Background()
	c, _ := adminclient.New(url, token(t, reg, registry.RoleAdmin))
	cl, tok, err := c.CreateCluster(ctx, adminclient.ClusterSpec{Name: "prod"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeToken(ctx, tok.ID, "leaked"); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeToken(ctx, tok.ID, ""); !adminclient.IsCode(err, "conflict") {
		t.Fatalf("second revoke = %v, want conflict", err)
	}
	if _, err := reg.Register(ctx, registry.RegisterParams{Token: tok.Token}); err == nil {
		t.Fatal("a revoked token registered")
	}
	k, err := c.RotateSigningKey(ctx, "prod", time.Hour)
	if err != nil || k.ClusterID != cl.ID || k.Key.Kid == "" || k.Key.Crv != "Ed25519" || !k.OverlapUntil.Equal(k.CreatedAt.Add(time.Hour)) {
		t.Fatalf("RotateSigningKey = %+v %v", k, err)
	}
	admin := registry.WithActor(ctx, registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	set, err := reg.SigningKeySet(admin, cl.ID)
	if err != nil || len(set) == 0 || set[0].Kid != k.Key.Kid {
		t.Fatalf("key set %+v %v, want %s first", set, err, k.Key.Kid)
	}
}
