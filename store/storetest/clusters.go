package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tetherhq/tether/registry"
)

func testClusters(t *testing.T, newStore NewStore) {
	t.Run("CreateGetList", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("prod-1", nil)
		if c.State != registry.ClusterPending || c.Version != 1 {
			t.Fatalf("new cluster state %s version %d, want pending version 1", c.State, c.Version)
		}
		if tok.Token.ClusterID != c.ID || tok.Secret == "" {
			t.Fatalf("first token not issued for the cluster: %+v", tok.Token)
		}
		byID, err := e.reg.GetCluster(e.ctx, c.ID)
		wantNoErr(t, err)
		byName, err := e.reg.GetCluster(e.ctx, "PROD-1")
		wantNoErr(t, err)
		if byID.ID != c.ID || byName.ID != c.ID {
			t.Fatalf("get by id/name = %s/%s, want %s", byID.ID, byName.ID, c.ID)
		}
		if byID.Name != "prod-1" || byID.Organization != "org" || byID.Policy.LeaseSeconds != 60 || byID.Policy.MaxAttempts != 5 {
			t.Fatalf("stored cluster = %+v", byID.ClusterSpec)
		}
		if got := strings.Join(byID.AllowedNamespaces, ","); got != "team-a" {
			t.Fatalf("namespaces = %q", got)
		}
		e.cluster("alpha", nil)
		list, err := e.reg.ListClusters(e.ctx, registry.ClusterListParams{})
		wantNoErr(t, err)
		if len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "prod-1" {
			t.Fatalf("list = %v, want alpha, prod-1 by name", names(list))
		}
		_, err = e.reg.GetCluster(e.ctx, "nope")
		wantCode(t, err, registry.CodeNotFound)
	})

	t.Run("RequireClientCertificate", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("mtls", func(s *registry.ClusterSpec) { s.Policy.RequireClientCertificate = true })
		got, err := e.reg.GetCluster(e.ctx, c.ID)
		wantNoErr(t, err)
		if !got.Policy.RequireClientCertificate || got.Policy.RequireSignedPayloads {
			t.Fatalf("stored policy %+v, want mTLS required and payloads unsigned", got.Policy)
		}
		got, err = e.reg.ModifyCluster(e.ctx, c.ID, func(s *registry.ClusterSpec) error {
			s.Policy.RequireClientCertificate = false
			s.Policy.RequireSignedPayloads = true
			return nil
		})
		wantNoErr(t, err)
		if got.Policy.RequireClientCertificate || !got.Policy.RequireSignedPayloads {
			t.Fatalf("updated policy %+v, want mTLS off and payloads signed", got.Policy)
		}
		if got, _ = e.reg.GetCluster(e.ctx, c.ID); !got.Policy.RequireSignedPayloads {
			t.Fatal("the signed-payloads requirement did not read back")
		}
		if got, _ = e.reg.GetCluster(e.ctx, c.ID); got.Policy.RequireClientCertificate {
			t.Fatal("the mTLS requirement read back after turning it off")
		}
	})

	t.Run("DuplicateNameConflicts", func(t *testing.T) {
		e := newEnv(t, newStore)
		e.cluster("prod", nil)
		_, _, err := e.reg.CreateCluster(e.ctx, registry.ClusterSpec{Name: "Prod"}, 0)
		wantCode(t, err, registry.CodeConflict)
	})

	t.Run("InvalidSpec", func(t *testing.T) {
		e := newEnv(t, newStore)
		for _, spec := range []registry.ClusterSpec{
			{},
			{Name: "x", AllowedNamespaces: []string{"Bad_NS"}},
			{Name: "x", AllowedOperationTemplates: []string{"Backup.Velero"}},
			{Name: "x", Mode: "carrier-pigeon"},
			{Name: "x", Policy: registry.Policy{LeaseSeconds: 2, MaxAttempts: 5}},
			{Name: "x", Policy: registry.Policy{LeaseSeconds: 60, MaxAttempts: 500}},
			{Name: "x", Policy: registry.Policy{LeaseSeconds: 60, MaxAttempts: 5, RequiredCapabilities: []string{"telepathy"}}},
		} {
			_, _, err := e.reg.CreateCluster(e.ctx, spec, 0)
			wantCode(t, err, registry.CodeInvalid)
		}
		list, _ := e.reg.ListClusters(e.ctx, registry.ClusterListParams{})
		if len(list) != 0 {
			t.Fatalf("invalid specs created clusters: %v", names(list))
		}
	})

	t.Run("CompareAndSwap", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		spec := c.ClusterSpec
		spec.AllowedNamespaces = []string{"team-a", "team-b"}
		updated, err := e.reg.UpdateCluster(e.ctx, c.ID, c.Version, spec)
		wantNoErr(t, err)
		if updated.Version != 2 || len(updated.AllowedNamespaces) != 2 {
			t.Fatalf("after edit: version %d namespaces %v", updated.Version, updated.AllowedNamespaces)
		}
		// A second edit from the version first read is stale.
		spec.AllowedNamespaces = []string{"team-c"}
		_, err = e.reg.UpdateCluster(e.ctx, c.ID, c.Version, spec)
		wantCode(t, err, registry.CodeConflict)
		if !strings.Contains(err.Error(), "version 2") {
			t.Fatalf("conflict error %q does not name the current version 2", err)
		}
		got, _ := e.reg.GetCluster(e.ctx, c.ID)
		if strings.Join(got.AllowedNamespaces, ",") != "team-a,team-b" {
			t.Fatalf("stale edit overwrote the record: %v", got.AllowedNamespaces)
		}
	})

	t.Run("ConcurrentModifyKeepsEveryEdit", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, _ := e.cluster("prod", nil)
		const n = 8
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.reg.ModifyCluster(e.ctx, c.ID, func(s *registry.ClusterSpec) error {
					s.AllowedNamespaces = append(s.AllowedNamespaces, fmt.Sprintf("ns-%d", i))
					return nil
				})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		failed := 0
		for err := range errs {
			if err != nil {
				wantCode(t, err, registry.CodeConflict) // only after repeated lost races
				failed++
			}
		}
		got, _ := e.reg.GetCluster(e.ctx, c.ID)
		if len(got.AllowedNamespaces) != 1+n-failed {
			t.Fatalf("namespaces %v: %d edits succeeded, want each kept", got.AllowedNamespaces, n-failed)
		}
		if got.Version != int64(1+n-failed) {
			t.Fatalf("version %d after %d successful edits", got.Version, n-failed)
		}
	})

	t.Run("HeartbeatsDoNotBumpVersion", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("prod")
		before, _ := e.reg.GetCluster(e.ctx, a.Cluster.ID)
		_, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: registry.EventClusterHeartbeat}})
		wantNoErr(t, err)
		after, _ := e.reg.GetCluster(e.ctx, a.Cluster.ID)
		if after.Version != before.Version {
			t.Fatalf("heartbeat changed version %d -> %d", before.Version, after.Version)
		}
		if after.Status.LastHeartbeatAt.IsZero() {
			t.Fatal("heartbeat not recorded in status")
		}
	})

	t.Run("DisableEnable", func(t *testing.T) {
		e := newEnv(t, newStore)
		pending, _ := e.cluster("never-registered", nil)
		a, cred := e.agent("registered")
		for _, c := range []*registry.Cluster{pending, a.Cluster} {
			d, err := e.reg.SetClusterEnabled(e.ctx, c.ID, false, "maintenance")
			wantNoErr(t, err)
			if d.State != registry.ClusterDisabled {
				t.Fatalf("disabled state = %s", d.State)
			}
		}
		_, err := e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthAny)
		wantCode(t, err, registry.CodeClusterDisabled)
		_, _, err = e.reg.SubmitJob(e.ctx, registry.JobSubmission{ClusterID: a.Cluster.ID, Kind: registry.KindApply, Payload: []byte(applyPayload)})
		wantCode(t, err, registry.CodeForbidden)
		p, _ := e.reg.SetClusterEnabled(e.ctx, pending.ID, true, "")
		r, _ := e.reg.SetClusterEnabled(e.ctx, a.Cluster.ID, true, "")
		if p.State != registry.ClusterPending || r.State != registry.ClusterActive {
			t.Fatalf("enabled states = %s, %s; want pending, active", p.State, r.State)
		}
		if len(e.auditFor(registry.AuditClusterDisable)) != 2 || len(e.auditFor(registry.AuditClusterEnable)) != 2 {
			t.Fatal("disable/enable not audited")
		}
	})

	t.Run("DeleteCascades", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, _ := e.agent("doomed", registry.CapabilityLease)
		keep, _ := e.agent("kept")
		j := e.submit(a.Cluster.ID, nil)
		_, err := e.reg.AckJob(e.ctx, a, j.ID)
		wantNoErr(t, err)
		kj := e.submit(keep.Cluster.ID, nil)
		_, err = e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: "Audit", EventKey: "k"}, {Kind: registry.EventClusterHeartbeat}})
		wantNoErr(t, err)
		_, err = e.reg.IssueToken(e.ctx, a.Cluster.ID, 0)
		wantNoErr(t, err)

		_, err = e.reg.DeleteCluster(e.ctx, a.Cluster.ID, "decommissioned")
		wantNoErr(t, err)

		_, err = e.reg.GetCluster(e.ctx, a.Cluster.ID)
		wantCode(t, err, registry.CodeNotFound)
		_, err = e.reg.GetJob(e.ctx, j.ID)
		wantCode(t, err, registry.CodeNotFound)
		if h, _ := e.reg.JobHistory(e.ctx, j.ID); len(h) != 0 {
			t.Fatalf("history of a deleted job survived: %v", h)
		}
		if toks, _ := e.store.TokenList(e.ctx, a.Cluster.ID); len(toks) != 0 {
			t.Fatalf("%d tokens survived", len(toks))
		}
		if creds, _ := e.store.CredentialList(e.ctx, a.Cluster.ID); len(creds) != 0 {
			t.Fatalf("%d credentials survived", len(creds))
		}
		if evs, _ := e.reg.ListEvents(e.ctx, registry.EventListParams{ClusterID: a.Cluster.ID}); len(evs) != 0 {
			t.Fatalf("%d events survived", len(evs))
		}
		if n := e.counts(a.Cluster.ID); len(n) != 0 {
			t.Fatalf("job counts survived: %v", n)
		}
		// The other cluster is untouched, and the deletion is audited.
		if e.job(kj.ID).State != registry.JobQueued {
			t.Fatal("another cluster's job changed")
		}
		if got := e.counts(keep.Cluster.ID)[registry.JobQueued]; got != 1 {
			t.Fatalf("other cluster's queued count = %d", got)
		}
		del := e.auditFor(registry.AuditClusterDelete)
		if len(del) != 1 || del[0].TargetID != a.Cluster.ID || del[0].Reason != "decommissioned" || del[0].Actor != "admin:tester" {
			t.Fatalf("delete audit = %+v", del)
		}
		_, err = e.reg.DeleteCluster(e.ctx, a.Cluster.ID, "")
		wantCode(t, err, registry.CodeNotFound)
	})
}

func names(cs []registry.Cluster) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
