package admin_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/store/sqlite"
)

// world is one registry on a SQLite file, served on loopback, and the two
// Services over it: Local, as the CLI over --db and the console beside a
// server have it, and Remote, over the admin API with an admin token, as
// the CLI and console with --server have it.
type world struct {
	reg    *registry.Registry
	clock  *clocktest.Clock
	ctx    context.Context // as the admin, for seeding
	local  *admin.Local
	remote *admin.Remote
	url    string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.New()
	reg := registry.New(st, registry.Config{Clock: clock, Keyring: registry.NewKeyFile(filepath.Join(dir, "key"))})
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
	actor := registry.Actor{Kind: registry.ActorAdmin, Name: "alice"}
	w := &world{reg: reg, clock: clock, ctx: registry.WithActor(context.Background(), actor),
		local: admin.NewLocal(reg, actor), url: "http://" + ln.Addr().String()}
	w.remote = w.connect(t, registry.RoleAdmin, "")
	return w
}

// connect returns a Remote with a new token of the role (and organization).
func (w *world) connect(t *testing.T, role registry.Role, org string) *admin.Remote {
	t.Helper()
	tok, err := w.reg.CreateAdminToken(w.ctx, fmt.Sprintf("%s-%s-%d", role, org, time.Now().UnixNano()), role, org, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := adminclient.New(w.url, tok.Secret.Reveal())
	if err != nil {
		t.Fatal(err)
	}
	r, err := admin.NewRemote(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// x25519 is an agent's encryption public key, as a JWK.
func x25519(t *testing.T) registry.AgentPublicKey {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "X25519", "x": base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes())})
	pub, err := registry.ParseAgentPublicKey("publicKey", jwk)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func (w *world) cluster(t *testing.T, spec registry.ClusterSpec) *registry.Cluster {
	t.Helper()
	c, _, err := w.reg.CreateCluster(w.ctx, spec, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fleet is what seed made.
type fleet struct {
	eu, us, staging  *registry.Cluster
	euToken          *registry.IssuedToken
	queued, canceled *registry.Job
	leased           *registry.Job
	rollout          *registry.Rollout
	webhook          *registry.Webhook
}

func configMap(ns, name string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q}}`, name, ns))
}

// seed makes something of everything the Service reads: clusters of two
// organizations, one with every spec field set, a registered agent with
// heartbeats and events, jobs queued, leased and canceled, a rollout, a
// webhook with a delivery, tether's CA, and the audit trail all this
// leaves.
func seed(t *testing.T, w *world) fleet {
	t.Helper()
	var f fleet
	var err error
	f.eu, f.euToken, err = w.reg.CreateCluster(w.ctx, registry.ClusterSpec{Name: "prod-eu", Organization: "acme",
		Labels: registry.Labels{"env": "prod", "region": "eu"}, PublicKey: x25519(t),
		AllowedNamespaces: []string{"apps", "web"}, AllowedCatalogEntries: []string{"postgres"},
		AllowedOperationTemplates: []string{"backup.velero"},
		Policy: registry.Policy{LeaseSeconds: 600, MaxAttempts: 3, RequiredCapabilities: []string{registry.CapabilityLease},
			RequireSignedPayloads: true, AllowLegacyPayloadSignatures: true}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.us = w.cluster(t, registry.ClusterSpec{Name: "prod-us", Organization: "globex",
		Labels: registry.Labels{"env": "prod"}, AllowedNamespaces: []string{"*"}, Policy: registry.DefaultPolicy()})
	f.staging = w.cluster(t, registry.ClusterSpec{Name: "staging",
		Labels: registry.Labels{"env": "staging"}, AllowedNamespaces: []string{"apps"}, Policy: registry.DefaultPolicy()})

	agentCtx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAgent, Name: "unregistered@10.0.0.7"})
	issued, err := w.reg.Register(agentCtx, registry.RegisterParams{Token: f.euToken.Secret.Reveal(),
		Capabilities: []string{registry.CapabilityLease, registry.CapabilityHMAC}})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := w.reg.Authenticate(context.Background(), issued.Token.Reveal(), registry.AuthAny)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.reg.AppendEvents(context.Background(), agent, "", []registry.Event{
		{Kind: registry.EventClusterHeartbeat, ResourceRef: registry.ResourceRef{APIVersion: "ops.vworkspace.io/v1alpha1", Kind: "Cluster", Name: agent.Cluster.ID},
			Conditions: []registry.Condition{{Type: "Ready", Status: "False", Reason: "Drill"}}},
	}); err != nil {
		t.Fatal(err)
	}

	submit := func(cluster, name string) *registry.Job {
		j, _, err := w.reg.SubmitJob(w.ctx, registry.JobSubmission{ClusterID: cluster, Kind: registry.KindApply, Payload: configMap("apps", name)})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	w.clock.Advance(time.Minute)
	f.leased = submit(f.eu.ID, "leased")
	if _, err := w.reg.AckJob(context.Background(), agent, f.leased.ID); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	f.queued = submit(f.staging.ID, "queued")
	f.canceled = submit(f.us.ID, "canceled")
	f.canceled = must[*registry.Job](t)(w.reg.CancelJob(w.ctx, f.canceled.ID, "wrong one"))
	w.clock.Advance(time.Minute)
	f.rollout = must[*registry.Rollout](t)(w.reg.CreateRollout(w.ctx, registry.RolloutSpec{Name: "wave", Selector: "env=prod",
		Kind: registry.KindApply, Payload: configMap("apps", "wave"), MaxParallel: 1}))
	var secret registry.Secret
	f.webhook, secret, err = w.reg.CreateWebhook(w.ctx, "billing", "https://hooks.example.com/tether", []string{"job.finished"}, "")
	if err != nil {
		t.Fatal(err)
	}
	_ = secret
	if _, err := w.reg.SendTestWebhook(w.ctx, f.webhook.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.reg.InitCA(w.ctx, false); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	return f
}

// same fails unless both answers encode to the same JSON, or both are
// errors with the same code and message.
func same(t *testing.T, what string, local, remote any, lerr, rerr error) {
	t.Helper()
	if lerr != nil || rerr != nil {
		if registry.ErrorCode(lerr) != registry.ErrorCode(rerr) || registry.ErrorMessage(lerr) != registry.ErrorMessage(rerr) {
			t.Errorf("%s: local error %v, remote error %v", what, lerr, rerr)
		}
		return
	}
	l, _ := json.Marshal(local)
	r, _ := json.Marshal(remote)
	if string(l) != string(r) {
		t.Errorf("%s differs:\nlocal  %s\nremote %s", what, l, r)
	}
}
