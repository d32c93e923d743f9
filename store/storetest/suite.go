// Package storetest is the behaviour every registry.Store must have. A backend
// runs it from its own tests:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) registry.Store { return openMyStore(t) })
//	}
//
// The suite drives the store through the registry on a fake clock, so it
// checks the rules of the protocol and the atomicity the store owes them
// together, concurrency included.
package storetest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
)

// NewStore returns a fresh, empty store; the suite closes it.
type NewStore func(t *testing.T) registry.Store

// Run runs the whole suite.
func Run(t *testing.T, newStore NewStore) {
	t.Run("Clusters", func(t *testing.T) { testClusters(t, newStore) })
	t.Run("Tokens", func(t *testing.T) { testTokens(t, newStore) })
	t.Run("Credentials", func(t *testing.T) { testCredentials(t, newStore) })
	t.Run("Submit", func(t *testing.T) { testSubmit(t, newStore) })
	t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, newStore) })
	t.Run("Jobs", func(t *testing.T) { testJobs(t, newStore) })
	t.Run("SearchIndex", func(t *testing.T) { testSearchIndex(t, newStore) })
	t.Run("SearchIndexMerge", func(t *testing.T) { testSearchIndexMerge(t, newStore) })
	t.Run("Stuck", func(t *testing.T) { testStuck(t, newStore) })
	t.Run("Reaper", func(t *testing.T) { testReaper(t, newStore) })
	t.Run("Claims", func(t *testing.T) { testClaims(t, newStore) })
	t.Run("ReclaimsByCluster", func(t *testing.T) { testReclaimsByCluster(t, newStore) })
	t.Run("Events", func(t *testing.T) { testEvents(t, newStore) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, newStore) })
	t.Run("Watch", func(t *testing.T) { testWatch(t, newStore) })
	t.Run("Authz", func(t *testing.T) { testAuthz(t, newStore) })
	t.Run("AdminTokens", func(t *testing.T) { testAdminTokens(t, newStore) })
	t.Run("SSHKeys", func(t *testing.T) { testSSHKeys(t, newStore) })
	t.Run("Pause", func(t *testing.T) { testPause(t, newStore) })
	t.Run("Retry", func(t *testing.T) { testRetry(t, newStore) })
	t.Run("RetriedBy", func(t *testing.T) { testRetriedBy(t, newStore) })
	t.Run("DeleteJob", func(t *testing.T) { testDeleteJob(t, newStore) })
	t.Run("DeleteJobRaces", func(t *testing.T) { testDeleteJobRaces(t, newStore) })
	t.Run("RequeueAttempt", func(t *testing.T) { testRequeueAttempt(t, newStore) })
	t.Run("Signatures", func(t *testing.T) { testSignatures(t, newStore) })
	t.Run("SealedSecrets", func(t *testing.T) { testSealedSecrets(t, newStore) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, newStore) })
	t.Run("RetentionConcurrent", func(t *testing.T) { testRetentionConcurrent(t, newStore) })
	t.Run("AuditIDsAfterPrune", func(t *testing.T) { testAuditIDsAfterPrune(t, newStore) })
	t.Run("WebhookDeliveryRetention", func(t *testing.T) { testWebhookDeliveryRetention(t, newStore) })
	t.Run("Visibility", func(t *testing.T) { testVisibility(t, newStore) })
	t.Run("AgentText", func(t *testing.T) { testAgentText(t, newStore) })
	t.Run("AdminBadText", func(t *testing.T) { testAdminBadText(t, newStore) })
	t.Run("Webhooks", func(t *testing.T) { testWebhooks(t, newStore) })
	t.Run("WebhookManage", func(t *testing.T) { testWebhookManage(t, newStore) })
	t.Run("WebhookNames", func(t *testing.T) { testWebhookNames(t, newStore) })
	t.Run("Labels", func(t *testing.T) { testLabels(t, newStore) })
	t.Run("Rollouts", func(t *testing.T) { testRollouts(t, newStore) })
	t.Run("Paging", func(t *testing.T) { testPaging(t, newStore) })
	t.Run("SigningKeys", func(t *testing.T) { testSigningKeys(t, newStore) })
	t.Run("EncryptedPayloads", func(t *testing.T) { testEncryptedPayloads(t, newStore) })
	t.Run("Delivery", func(t *testing.T) { testDelivery(t, newStore) })
	t.Run("CertificateAuthority", func(t *testing.T) { testCertificateAuthority(t, newStore) })
	t.Run("KeyRotation", func(t *testing.T) { testKeyRotation(t, newStore) })
	t.Run("QueueHealth", func(t *testing.T) { testQueueHealth(t, newStore) })
	t.Run("QueueStats", func(t *testing.T) { testQueueStats(t, newStore) })
	t.Run("Ready", func(t *testing.T) { testReady(t, newStore) })
	t.Run("Observability", func(t *testing.T) { testObservability(t, newStore) })
}

// env is a registry over a fresh store on a fake clock.
type env struct {
	t     *testing.T
	store registry.Store
	clock *clocktest.Clock
	reg   *registry.Registry
	ctx   context.Context
}

func newEnv(t *testing.T, newStore NewStore) *env {
	t.Helper()
	st := newStore(t)
	clock := clocktest.New()
	keys := registry.NewKeyFile(filepath.Join(t.TempDir(), "tether.key"))
	reg := registry.New(st, registry.Config{Clock: clock, Keyring: keys})
	t.Cleanup(func() {
		reg.Close()
		st.Close()
	})
	ctx := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "tester"})
	return &env{t: t, store: st, clock: clock, reg: reg, ctx: ctx}
}

// cluster creates a cluster that allows namespace "team-a" and catalog entry
// "nextcloud", with the given policy tweaks, and returns it with its token.
func (e *env) cluster(name string, tweak func(*registry.ClusterSpec)) (*registry.Cluster, *registry.IssuedToken) {
	e.t.Helper()
	spec := registry.ClusterSpec{
		Name:                      name,
		Organization:              "org",
		AllowedNamespaces:         []string{"team-a"},
		AllowedCatalogEntries:     []string{"nextcloud"},
		AllowedOperationTemplates: []string{"backup.velero"},
		Policy:                    registry.DefaultPolicy(),
	}
	if tweak != nil {
		tweak(&spec)
	}
	c, tok, err := e.reg.CreateCluster(e.ctx, spec, 0)
	if err != nil {
		e.t.Fatalf("CreateCluster(%s): %v", name, err)
	}
	return c, tok
}

// agent registers an agent for a new cluster and authenticates it.
func (e *env) agent(name string, caps ...string) (*registry.Agent, *registry.IssuedCredential) {
	e.t.Helper()
	_, tok := e.cluster(name, nil)
	return e.register(tok, caps...)
}

func (e *env) register(tok *registry.IssuedToken, caps ...string) (*registry.Agent, *registry.IssuedCredential) {
	e.t.Helper()
	cred, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: caps})
	if err != nil {
		e.t.Fatalf("Register: %v", err)
	}
	a, err := e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthAny)
	if err != nil {
		e.t.Fatalf("Authenticate: %v", err)
	}
	return a, cred
}

const applyPayload = `{"apiVersion":"apps.vworkspace.io/v1alpha1","kind":"ApplicationInstance",
	"metadata":{"name":"nc","namespace":"team-a"},"spec":{"appRef":{"catalogId":"nextcloud"}}}`

// submit queues an apply job for the cluster.
func (e *env) submit(clusterID string, mod func(*registry.JobSubmission)) *registry.Job {
	e.t.Helper()
	s := registry.JobSubmission{ClusterID: clusterID, Kind: registry.KindApply, Payload: json.RawMessage(applyPayload)}
	if mod != nil {
		mod(&s)
	}
	j, _, err := e.reg.SubmitJob(e.ctx, s)
	if err != nil {
		e.t.Fatalf("SubmitJob: %v", err)
	}
	return j
}

func (e *env) job(id string) *registry.Job {
	e.t.Helper()
	j, err := e.reg.GetJob(e.ctx, id)
	if err != nil {
		e.t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j
}

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code registry.Code) {
	t.Helper()
	if got := registry.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

// errOf is ReportResult's error, for wantNoErr and friends.
func errOf[T any](_ T, err error) error { return err }

func wantNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// auditFor returns the audit entries with the given action, newest first.
func (e *env) auditFor(action string) []registry.AuditEntry {
	e.t.Helper()
	entries, err := e.reg.ListAudit(e.ctx, registry.AuditListParams{Action: action, Limit: 1000})
	if err != nil {
		e.t.Fatalf("ListAudit: %v", err)
	}
	return entries
}

// counts returns the job counts of a cluster by state.
func (e *env) counts(clusterID string) map[registry.JobState]int64 {
	e.t.Helper()
	all, err := e.reg.JobCounts(e.ctx)
	if err != nil {
		e.t.Fatalf("JobCounts: %v", err)
	}
	out := map[registry.JobState]int64{}
	for _, c := range all {
		if c.ClusterID == clusterID {
			out[c.State] = c.Count
		}
	}
	return out
}

const second = time.Second
