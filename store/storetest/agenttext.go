package storetest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tetherhq/tether/registry"
)

// testAgentText: what agents send is stored faithfully or refused with a
// message naming the field, never a store failure, on every store: a NUL
// character (which PostgreSQL's text cannot hold) is refused, invalid UTF-8
// is replaced, and the job can still be finished afterwards.
func testAgentText(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod", registry.CapabilityLease)
	j := e.submit(a.Cluster.ID, nil)
	claim, err := e.reg.AckJob(e.ctx, a, j.ID)
	wantNoErr(t, err)

	err = e.reg.ReportStatus(e.ctx, a, j.ID, claim.ClaimID, registry.StatusReport{Phase: "Applying", Message: "half\x00way"})
	wantCode(t, err, registry.CodeInvalid)
	if !strings.Contains(err.Error(), "message") {
		t.Fatalf("%v does not name the field", err)
	}
	err = e.reg.ReportStatus(e.ctx, a, j.ID, claim.ClaimID, registry.StatusReport{Conditions: []registry.Condition{{Type: "Ready", Status: "False", Reason: "x\x00"}}})
	wantCode(t, err, registry.CodeInvalid)
	if !strings.Contains(err.Error(), "conditions[0].reason") {
		t.Fatalf("%v does not name the field", err)
	}
	_, err = e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "boom\x00"})
	wantCode(t, err, registry.CodeInvalid)
	_, err = e.reg.AckJob(e.ctx, a, "j-\x00")
	wantCode(t, err, registry.CodeJobNotFound)
	_, err = e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: "Audit", Message: "a\x00b"}})
	wantCode(t, err, registry.CodeInvalid)
	if !strings.Contains(err.Error(), "events[0].message") {
		t.Fatalf("%v does not name the field", err)
	}

	// Invalid UTF-8 is kept readable, and the job finishes as normal.
	wantNoErr(t, errOf(e.reg.ReportResult(e.ctx, a, j.ID, claim.ClaimID, registry.ResultReport{Outcome: registry.OutcomeFailed, Error: "bad \xff byte"})))
	got := e.job(j.ID)
	if got.State != registry.JobFailed || !utf8.ValidString(got.Error) || !strings.Contains(got.Error, "bad \uFFFD byte") {
		t.Fatalf("job %s error %q", got.State, got.Error)
	}
	n, err := e.reg.AppendEvents(e.ctx, a, "", []registry.Event{{Kind: "Audit", Message: "caf\xe9"}})
	wantNoErr(t, err)
	events, _ := e.reg.ListEvents(e.ctx, registry.EventListParams{ClusterID: a.Cluster.ID})
	if n != 1 || len(events) != 1 || events[0].Message != "caf\uFFFD" {
		t.Fatalf("stored events %+v", events)
	}
}

// testAdminBadText: an admin's text with a NUL character or bytes that are
// not UTF-8 (a path segment %00, a query parameter %FF, a JSON \u0000) is
// the caller's mistake on every store: a lookup finds nothing or the request
// is refused as invalid, never a server failure (PostgreSQL's text cannot
// hold either, and said so with an error the server answered 500).
func testAdminBadText(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore)
	a, _ := e.agent("prod", registry.CapabilityLease)
	j := e.submit(a.Cluster.ID, nil)
	_, tok, err := e.reg.CreateCluster(e.ctx, registry.ClusterSpec{Name: "staging", AllowedNamespaces: []string{"team-a"}}, 0)
	wantNoErr(t, err)
	for _, bad := range []string{"x\x00y", "x\xffy"} {
		calls := map[string]func() error{
			"GetCluster": func() error { _, err := e.reg.GetCluster(e.ctx, bad); return err },
			"GetJob":     func() error { _, err := e.reg.GetJob(e.ctx, bad); return err },
			"GetRollout": func() error { _, err := e.reg.GetRollout(e.ctx, bad); return err },
			"ListJobs":   func() error { _, err := e.reg.ListJobs(e.ctx, registry.JobListParams{Search: bad}); return err },
			"ListAudit": func() error {
				_, err := e.reg.ListAudit(e.ctx, registry.AuditListParams{Action: bad, ClusterID: bad})
				return err
			},
			"RevokeToken": func() error { _, err := e.reg.RevokeToken(e.ctx, bad, ""); return err },
			"PauseReason": func() error {
				_, err := e.reg.SetClusterPaused(e.ctx, a.Cluster.ID, true, bad)
				if err == nil {
					_, err = e.reg.SetClusterPaused(e.ctx, a.Cluster.ID, false, "")
				}
				return err
			},
			"CancelReason":      func() error { _, err := e.reg.CancelJob(e.ctx, j.ID, bad); return err },
			"RevokeTokenReason": func() error { _, err := e.reg.RevokeToken(e.ctx, tok.Token.ID, bad); return err },
		}
		for name, call := range calls {
			if err := call(); registry.ErrorCode(err) == registry.CodeInternal {
				t.Errorf("%s(%q): %v, want a lookup that finds nothing or a refusal", name, bad, err)
			}
		}
	}
}
