package storetest

import (
	"context"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// testAuthz checks roles and organization scopes through the registry: every
// front end (CLI, console, admin API) gets the same answers because the
// registry gives them.
func testAuthz(t *testing.T, newStore NewStore) {
	as := func(role registry.Role, org string) context.Context {
		return registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdminToken, Name: string(role) + "-" + org, Role: role, Org: org})
	}

	t.Run("Roles", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		j := e.submit(c.ID, nil)
		viewer, operator, admin := as(registry.RoleViewer, ""), as(registry.RoleOperator, ""), as(registry.RoleAdmin, "")

		// Everyone reads.
		for _, ctx := range []context.Context{viewer, operator, admin} {
			_, err := e.reg.GetCluster(ctx, c.ID)
			wantNoErr(t, err)
			_, err = e.reg.GetJob(ctx, j.ID)
			wantNoErr(t, err)
		}
		// A viewer changes nothing, and the refusal names the role needed.
		_, _, err := e.reg.SubmitJob(viewer, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: []byte(applyPayload)})
		wantCode(t, err, registry.CodeForbidden)
		if msg := registry.ErrorMessage(err); msg != `admin-token:viewer- has the viewer role; this needs the operator role` {
			t.Fatalf("refusal = %q", msg)
		}
		_, err = e.reg.CancelJob(viewer, j.ID, "")
		wantCode(t, err, registry.CodeForbidden)
		// An operator runs the queue but does not manage clusters.
		_, _, err = e.reg.SubmitJob(operator, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply, Payload: []byte(applyPayload)})
		wantNoErr(t, err)
		_, err = e.reg.CancelJob(operator, j.ID, "")
		wantNoErr(t, err)
		for name, call := range map[string]func(context.Context) error{
			"issue token": func(ctx context.Context) error { _, err := e.reg.IssueToken(ctx, c.ID, 0); return err },
			"disable":     func(ctx context.Context) error { _, err := e.reg.SetClusterEnabled(ctx, c.ID, false, ""); return err },
			"revoke":      func(ctx context.Context) error { _, err := e.reg.RevokeCredentials(ctx, c.ID, ""); return err },
			"create": func(ctx context.Context) error {
				_, _, err := e.reg.CreateCluster(ctx, registry.ClusterSpec{Name: "x-" + registry.ActorFrom(ctx).Name}, 0)
				return err
			},
		} {
			if err := call(operator); registry.ErrorCode(err) != registry.CodeForbidden {
				t.Errorf("%s as operator: %v, want forbidden", name, err)
			}
			if err := call(admin); err != nil {
				t.Errorf("%s as admin: %v", name, err)
			}
		}
	})

	t.Run("OrgIsolation", func(t *testing.T) {
		e := newEnv(t, newStore)
		mine, _ := e.cluster("mine", func(s *registry.ClusterSpec) { s.Organization = "acme" })
		theirs, _ := e.cluster("theirs", func(s *registry.ClusterSpec) { s.Organization = "globex" })
		myJob := e.submit(mine.ID, nil)
		theirJob := e.submit(theirs.ID, nil)
		acme := as(registry.RoleAdmin, "acme")

		// Out of scope reads exactly like absent, by id and by name.
		for _, ref := range []string{theirs.ID, "theirs"} {
			_, err := e.reg.GetCluster(acme, ref)
			wantCode(t, err, registry.CodeNotFound)
			if want := `no cluster has the id or name "` + ref + `" (tether cluster list shows them)`; registry.ErrorMessage(err) != want {
				t.Fatalf("out-of-scope message %q, want the one for a missing cluster, %q", registry.ErrorMessage(err), want)
			}
		}
		_, err := e.reg.GetJob(acme, theirJob.ID)
		wantCode(t, err, registry.CodeNotFound)
		_, err = e.reg.JobHistory(acme, theirJob.ID)
		wantCode(t, err, registry.CodeNotFound)
		_, err = e.reg.CancelJob(acme, theirJob.ID, "")
		wantCode(t, err, registry.CodeNotFound)
		_, _, err = e.reg.SubmitJob(acme, registry.JobSubmission{ClusterID: theirs.ID, Kind: registry.KindApply, Payload: []byte(applyPayload)})
		wantCode(t, err, registry.CodeNotFound)

		// Lists hold only what is in scope.
		clusters, err := e.reg.ListClusters(acme, registry.ClusterListParams{})
		wantNoErr(t, err)
		if len(clusters) != 1 || clusters[0].ID != mine.ID {
			t.Fatalf("clusters in scope = %v, want only mine", names(clusters))
		}
		jobs, err := e.reg.ListJobs(acme, registry.JobListParams{})
		wantNoErr(t, err)
		if len(jobs) != 1 || jobs[0].ID != myJob.ID {
			t.Fatalf("jobs in scope = %d, want only mine", len(jobs))
		}
		jobs, err = e.reg.ListJobs(acme, registry.JobListParams{ClusterIDs: []string{theirs.ID}})
		wantNoErr(t, err)
		if len(jobs) != 0 {
			t.Fatalf("jobs of an out-of-scope cluster listed: %d", len(jobs))
		}
		n, err := e.reg.CountJobs(acme, registry.JobListParams{})
		wantNoErr(t, err)
		counts, err := e.reg.JobCounts(acme)
		wantNoErr(t, err)
		if n != 1 || len(counts) != 1 || counts[0].ClusterID != mine.ID {
			t.Fatalf("count %d, counts %+v: want only mine", n, counts)
		}
		tokens, err := e.reg.ListTokens(acme, "")
		wantNoErr(t, err)
		for _, tok := range tokens {
			if tok.ClusterID != mine.ID {
				t.Fatalf("token of another org listed: %+v", tok)
			}
		}

		// Events and the audit trail, named no cluster, are the
		// organization's (an org's token opens the console's events and
		// audit views so); an organization without clusters has none.
		for _, c := range []*registry.Cluster{mine, theirs} {
			_, err := e.reg.AppendEvents(context.Background(), &registry.Agent{Cluster: c}, "", []registry.Event{{Kind: "Note", Message: c.Name}})
			wantNoErr(t, err)
		}
		events, err := e.reg.ListEvents(acme, registry.EventListParams{})
		wantNoErr(t, err)
		if len(events) != 1 || events[0].ClusterID != mine.ID {
			t.Fatalf("events in scope = %+v, want mine only", events)
		}
		audit, err := e.reg.ListAudit(acme, registry.AuditListParams{})
		wantNoErr(t, err)
		for _, a := range audit {
			if a.ClusterID != mine.ID {
				t.Fatalf("audit entry of another organization listed: %+v", a)
			}
		}
		if len(audit) == 0 {
			t.Fatal("no audit entry of the organization's cluster")
		}
		_, err = e.reg.ListEvents(acme, registry.EventListParams{ClusterID: theirs.ID})
		wantCode(t, err, registry.CodeNotFound)
		empty := as(registry.RoleViewer, "initech")
		if events, err := e.reg.ListEvents(empty, registry.EventListParams{}); err != nil || len(events) != 0 {
			t.Fatalf("an organization without clusters: events %v, %v", events, err)
		}

		// New clusters land in the scope's organization; others are refused.
		c, _, err := e.reg.CreateCluster(acme, registry.ClusterSpec{Name: "new"}, 0)
		wantNoErr(t, err)
		if c.Organization != "acme" {
			t.Fatalf("new cluster organization %q, want acme", c.Organization)
		}
		_, _, err = e.reg.CreateCluster(acme, registry.ClusterSpec{Name: "elsewhere", Organization: "globex"}, 0)
		wantCode(t, err, registry.CodeForbidden)
		_, err = e.reg.ModifyCluster(acme, mine.ID, func(s *registry.ClusterSpec) error { s.Organization = "globex"; return nil })
		wantCode(t, err, registry.CodeForbidden)
	})

	// tether's CA and the key file's seals serve every organization: an
	// admin confined to one may not replace the CA every agent's
	// certificate chains to, nor re-seal or count other organizations'
	// secrets.
	t.Run("FleetWideNeedsAnUnscopedAdmin", func(t *testing.T) {
		e := newEnv(t, newStore)
		acme := as(registry.RoleAdmin, "acme")
		_, err := e.reg.InitCA(e.ctx, false)
		wantNoErr(t, err)
		before, err := e.reg.CAs(e.ctx)
		wantNoErr(t, err)
		_, err = e.reg.InitCA(acme, true)
		wantCode(t, err, registry.CodeForbidden)
		after, err := e.reg.CAs(e.ctx)
		wantNoErr(t, err)
		if len(after) != 1 || after[0].ID != before[0].ID {
			t.Fatalf("an org-scoped admin replaced the CA: %+v", after)
		}
		_, err = e.reg.Reseal(acme, 0)
		wantCode(t, err, registry.CodeForbidden)
		_, err = e.reg.SealedKeyUsage(acme)
		wantCode(t, err, registry.CodeForbidden)
		// An admin of every organization may.
		_, err = e.reg.InitCA(as(registry.RoleAdmin, ""), true)
		wantNoErr(t, err)
	})
}
