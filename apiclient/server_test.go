package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

var admin = registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})

var fast = apiclient.RetryPolicy{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxAttempts: 5}

func serve(t *testing.T) (*registry.Registry, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(admin, filepath.Join(dir, "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, registry.Config{Keyring: registry.NewKeyFile(filepath.Join(dir, "tether.db.key"))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.New(reg, server.Config{Logger: slog.New(slog.DiscardHandler)}).Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done; reg.Close(); st.Close() })
	return reg, "http://" + ln.Addr().String()
}

func newAgent(t *testing.T, reg *registry.Registry, url, name string, caps ...string) (*registry.Cluster, *apiclient.Client) {
	t.Helper()
	c, tok, err := reg.CreateCluster(admin, registry.ClusterSpec{Name: name, AllowedNamespaces: []string{"team-a"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cred, err := apiclient.Register(context.Background(), url, tok.Secret.Reveal(), apiclient.RegisterOptions{
		ClusterIDHint: "not-the-real-id", Capabilities: caps, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	if cred.ClusterID != c.ID || cred.Token == "" || cred.ExpiresAt.IsZero() || cred.RotateAfter.IsZero() {
		t.Fatalf("credential = %+v", cred)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: url, Credential: cred, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	return c, client
}

func submit(t *testing.T, reg *registry.Registry, clusterID string) string {
	t.Helper()
	j, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: clusterID, Kind: registry.KindDelete,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func TestLeaseClientLifecycle(t *testing.T) {
	reg, url := serve(t)
	c, client := newAgent(t, reg, url, "prod", apiclient.CapabilityLease, apiclient.CapabilityHMAC)
	if client.Credential().HMACKey == "" || client.Credential().LeaseSeconds != 60 {
		t.Fatalf("negotiated credential = %+v", client.Credential())
	}
	ctx := context.Background()
	id := submit(t, reg, c.ID)
	jobs, err := client.Poll(ctx, 0, 10)
	if err != nil || len(jobs) != 1 || jobs[0].ID != id || jobs[0].Attempt != 1 || jobs[0].LeaseSeconds != 60 {
		t.Fatalf("Poll = %+v, %v", jobs, err)
	}
	claim, err := client.Ack(ctx, id)
	if err != nil || claim.ClaimID == "" || claim.LeaseExpiresAt.IsZero() {
		t.Fatalf("Ack = %+v, %v", claim, err)
	}
	if _, err := client.Ack(ctx, id); !errors.Is(err, apiclient.ErrNotClaimed) {
		t.Fatalf("second ack: %v", err)
	}
	until, err := client.Heartbeat(ctx, id, claim.ClaimID)
	if err != nil || until.IsZero() {
		t.Fatalf("Heartbeat = %v, %v", until, err)
	}
	if err := client.Status(ctx, id, claim.ClaimID, apiclient.Status{Phase: "Reconciling"}); err != nil {
		t.Fatal(err)
	}
	if err := client.Status(ctx, id, "fc-stale", apiclient.Status{Phase: "x"}); !errors.Is(err, apiclient.ErrStaleClaim) {
		t.Fatalf("stale claim: %v", err)
	}
	if err := client.Result(ctx, id, claim.ClaimID, apiclient.Result{Outcome: apiclient.OutcomeSucceeded}); err != nil {
		t.Fatal(err)
	}
	// Seed 000: a second result is a 409 that the client treats as success.
	if err := client.Result(ctx, id, claim.ClaimID, apiclient.Result{Outcome: apiclient.OutcomeSucceeded}); err != nil {
		t.Fatalf("second result: %v", err)
	}
	if _, err := client.Ack(ctx, "j-nope"); !errors.Is(err, apiclient.ErrJobGone) {
		t.Fatalf("unknown job: %v", err)
	}
	if err := client.Events(ctx, []apiclient.Event{apiclient.HeartbeatEvent(c.ID, time.Now(), nil)}); err != nil {
		t.Fatal(err)
	}
	got, _ := reg.GetCluster(admin, c.ID)
	if got.Status.LastHeartbeatAt.IsZero() || !got.Status.LastHeartbeatAt.After(time.Now().Add(-time.Minute)) {
		t.Fatalf("heartbeat not recorded: %v", got.Status.LastHeartbeatAt)
	}
}

func TestPollHoldsAndWakes(t *testing.T) {
	reg, url := serve(t)
	c, client := newAgent(t, reg, url, "prod")
	start := time.Now()
	jobs, err := client.Poll(context.Background(), time.Second, 0)
	if err != nil || len(jobs) != 0 || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("empty poll returned %d jobs after %s, err %v", len(jobs), time.Since(start), err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var polled []apiclient.Job
	go func() {
		defer wg.Done()
		polled, err = client.Poll(context.Background(), 60*time.Second, 0)
	}()
	time.Sleep(200 * time.Millisecond)
	id := submit(t, reg, c.ID)
	start = time.Now()
	wg.Wait()
	if err != nil || len(polled) != 1 || polled[0].ID != id {
		t.Fatalf("held poll = %+v, %v", polled, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("held poll answered %s after the submit", d)
	}
}

func TestRotationKeepsOldCredentialInGrace(t *testing.T) {
	reg, url := serve(t)
	c, client := newAgent(t, reg, url, "prod", apiclient.CapabilityHMAC)
	old := client.Credential()
	next, err := client.Rotate(context.Background())
	if err != nil || next.Token == old.Token || next.GraceUntil.IsZero() || next.HMACKey == old.HMACKey {
		t.Fatalf("Rotate = %+v, %v", next, err)
	}
	// The public operator keeps using the old token from some components.
	stale, err := apiclient.New(apiclient.Config{BaseURL: url, Credential: old, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Poll(context.Background(), 0, 0); err != nil {
		t.Fatalf("old credential refused inside the grace: %v", err)
	}
	if err := stale.Events(context.Background(), []apiclient.Event{{Kind: apiclient.EventAudit}}); err != nil {
		t.Fatalf("old credential's signed write refused inside the grace: %v", err)
	}
	if _, err := client.Poll(context.Background(), 0, 0); err != nil {
		t.Fatal(err)
	}
	_ = c
}

func TestRevokedIsUnauthenticated(t *testing.T) {
	reg, url := serve(t)
	c, client := newAgent(t, reg, url, "prod")
	if _, err := reg.RevokeCredentials(admin, c.ID, "test"); err != nil {
		t.Fatal(err)
	}
	_, err := client.Poll(context.Background(), 0, 0)
	var apiErr *apiclient.Error
	if !errors.Is(err, apiclient.ErrUnauthenticated) || !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.RequestID == "" {
		t.Fatalf("err = %v (%+v)", err, apiErr)
	}
}

func TestForbiddenAcrossClusters(t *testing.T) {
	reg, url := serve(t)
	_, a := newAgent(t, reg, url, "a")
	b, _ := newAgent(t, reg, url, "b")
	id := submit(t, reg, b.ID)
	if _, err := a.Ack(context.Background(), id); !errors.Is(err, apiclient.ErrForbidden) {
		t.Fatalf("ack of another cluster's job: %v", err)
	}
	if _, err := reg.SetClusterEnabled(admin, "a", false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Poll(context.Background(), 0, 0); !errors.Is(err, apiclient.ErrForbidden) || !apiclient.IsCode(err, apiclient.CodeClusterDisabled) {
		t.Fatalf("disabled cluster: %v", err)
	}
}
