package admin_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/registry"
)

// TestRemoteReadsAsLocal: over a real server on loopback, the admin API's
// Service answers every read as the registry's does, record for record
// and refusal for refusal: clusters with every filter, tokens,
// credentials, queues, jobs with the filters the CLI and console use,
// counts, a job with its timeline and its opened payload, rollouts,
// webhooks and their deliveries, admin tokens, the CA, events and audit
// paged by id, the feed's position.
func TestRemoteReadsAsLocal(t *testing.T) {
	w := newWorld(t)
	f := seed(t, w)
	ctx := context.Background()
	reads := []struct {
		what string
		call func(s admin.Service) (any, error)
	}{
		{"every cluster", func(s admin.Service) (any, error) { return s.ListClusters(ctx, registry.ClusterListParams{}) }},
		{"clusters by org", func(s admin.Service) (any, error) {
			return s.ListClusters(ctx, registry.ClusterListParams{Organization: "acme"})
		}},
		{"clusters by selector", func(s admin.Service) (any, error) {
			return s.ListClusters(ctx, registry.ClusterListParams{Selector: "env=prod"})
		}},
		{"active clusters", func(s admin.Service) (any, error) {
			return s.ListClusters(ctx, registry.ClusterListParams{State: registry.ClusterActive})
		}},
		{"a cluster by name", func(s admin.Service) (any, error) { return s.GetCluster(ctx, "prod-eu") }},
		{"a cluster by id", func(s admin.Service) (any, error) { return s.GetCluster(ctx, f.staging.ID) }},
		{"no such cluster", func(s admin.Service) (any, error) { return s.GetCluster(ctx, "nowhere") }},
		{"every token", func(s admin.Service) (any, error) { return s.ListTokens(ctx, "") }},
		{"a cluster's tokens", func(s admin.Service) (any, error) { return s.ListTokens(ctx, "prod-eu") }},
		{"credentials", func(s admin.Service) (any, error) { return s.ListCredentials(ctx, f.eu.ID) }},
		{"no credentials", func(s admin.Service) (any, error) { return s.ListCredentials(ctx, "staging") }},
		{"job counts", func(s admin.Service) (any, error) {
			c, err := s.JobCounts(ctx)
			slices.SortFunc(c, func(a, b registry.JobCount) int {
				return strings.Compare(a.ClusterID+string(a.State), b.ClusterID+string(b.State))
			})
			return c, err
		}},
		{"a queue", func(s admin.Service) (any, error) { return s.QueueHealth(ctx, "prod-eu") }},
		{"every queue", func(s admin.Service) (any, error) { return s.FleetQueueHealth(ctx) }},
		{"every job", func(s admin.Service) (any, error) { return s.ListJobs(ctx, registry.JobListParams{}) }},
		{"jobs filtered", func(s admin.Service) (any, error) {
			return s.ListJobs(ctx, registry.JobListParams{ClusterIDs: []string{f.eu.ID, f.staging.ID},
				States: []registry.JobState{registry.JobQueued, registry.JobInProgress}, Kind: registry.KindApply, OldestFirst: true})
		}},
		{"jobs by page", func(s admin.Service) (any, error) {
			return s.ListJobs(ctx, registry.JobListParams{Offset: 1, Limit: 1})
		}},
		{"jobs but a cluster's", func(s admin.Service) (any, error) {
			return s.ListJobs(ctx, registry.JobListParams{ExceptClusterIDs: []string{f.eu.ID}, Search: "queued"})
		}},
		{"jobs with a live lease", func(s admin.Service) (any, error) {
			return s.ListJobs(ctx, registry.JobListParams{LeaseLiveAt: w.clock.Now()})
		}},
		{"jobs without a lease", func(s admin.Service) (any, error) { return s.ListJobs(ctx, registry.JobListParams{NoLease: true}) }},
		{"job count", func(s admin.Service) (any, error) {
			return s.CountJobs(ctx, registry.JobListParams{States: []registry.JobState{registry.JobQueued, registry.JobCanceled}})
		}},
		{"stuck jobs", func(s admin.Service) (any, error) { return s.ListStuckJobs(ctx, registry.JobListParams{}) }},
		{"a job", func(s admin.Service) (any, error) { return s.GetJob(ctx, f.leased.ID) }},
		{"no such job", func(s admin.Service) (any, error) { return s.GetJob(ctx, "j-nope") }},
		{"a job's payload", func(s admin.Service) (any, error) { return s.ShowJobPayload(ctx, f.queued.ID) }},
		{"a job's timeline", func(s admin.Service) (any, error) { return s.JobHistory(ctx, f.canceled.ID) }},
		{"an ended job, waited on", func(s admin.Service) (any, error) { return s.WaitJob(ctx, f.canceled.ID) }},
		{"rollouts", func(s admin.Service) (any, error) { return s.ListRollouts(ctx, registry.RolloutListParams{Limit: 500}) }},
		{"running rollouts", func(s admin.Service) (any, error) {
			return s.ListRollouts(ctx, registry.RolloutListParams{States: []registry.RolloutState{registry.RolloutRunning}, Limit: 500})
		}},
		{"a rollout", func(s admin.Service) (any, error) { return s.GetRollout(ctx, "wave") }},
		{"webhooks", func(s admin.Service) (any, error) { return s.ListWebhooks(ctx) }},
		{"a webhook", func(s admin.Service) (any, error) { return s.GetWebhook(ctx, "billing") }},
		{"a webhook's deliveries", func(s admin.Service) (any, error) {
			_, d, err := s.WebhookDeliveries(ctx, "billing", 10)
			return d, err
		}},
		{"a delivery", func(s admin.Service) (any, error) {
			d, _, err := s.GetWebhookDelivery(ctx, "wd-1")
			return d, err
		}},
		{"admin tokens", func(s admin.Service) (any, error) { return s.ListAdminTokens(ctx) }},
		{"the CA", func(s admin.Service) (any, error) { return s.CAs(ctx) }},
		{"events", func(s admin.Service) (any, error) { return s.ListEvents(ctx, registry.EventListParams{}) }},
		{"events of a cluster, False only", func(s admin.Service) (any, error) {
			return s.ListEvents(ctx, registry.EventListParams{ClusterID: f.eu.ID, FalseOnly: true, Limit: 5})
		}},
		{"audit", func(s admin.Service) (any, error) { return s.ListAudit(ctx, registry.AuditListParams{}) }},
		{"audit by action, a page", func(s admin.Service) (any, error) {
			return s.ListAudit(ctx, registry.AuditListParams{Action: "cluster.", Limit: 2})
		}},
		{"audit before an id", func(s admin.Service) (any, error) {
			return s.ListAudit(ctx, registry.AuditListParams{BeforeID: 4, Limit: 2})
		}},
		{"audit after an id", func(s admin.Service) (any, error) {
			top, err := s.ListAudit(ctx, registry.AuditListParams{Limit: 1})
			if err != nil {
				return nil, err
			}
			return s.ListAudit(ctx, registry.AuditListParams{AfterID: top[0].ID - 2, Limit: 10})
		}},
		{"events after an id", func(s admin.Service) (any, error) {
			return s.ListEvents(ctx, registry.EventListParams{AfterID: 1})
		}},
		{"the feed's position", func(s admin.Service) (any, error) { return s.LatestSeq(ctx) }},
	}
	for _, r := range reads {
		// The remote first: reading a payload is audited, and the local
		// read of the trail must see the same entries.
		rv, rerr := r.call(w.remote)
		lv, lerr := r.call(w.local)
		same(t, r.what, lv, rv, lerr, rerr)
	}
	// A Remote measures ages by the server's clock (a fake one here, far
	// from this machine's), as learned when it connects.
	if got := w.connect(t, registry.RoleViewer, "").Now().Sub(w.clock.Now()); got < -time.Minute || got > time.Minute {
		t.Errorf("the remote's clock is %v from the server's; it should measure ages by the server's", got)
	}
}
