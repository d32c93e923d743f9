package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestRefusedSignaturesAudited: a flood of refused signed writes becomes one
// audit entry per credential per minute, with the count by reason, so that
// it can neither hide nor fill the trail.
func TestRefusedSignaturesAudited(t *testing.T) {
	e := newEnv(t)
	a := e.newAgent("c1", "hmac")
	job := e.submit(a.clusterID)
	forged := &agent{e: e, token: a.token, hmacKey: []byte("not the key, but 32 bytes long!!")}
	ack := "/api/agent/jobs/" + job + "/ack"
	for range 50 {
		e.do(http.MethodPost, ack, withBearer(a.token), forged.sign(e.clock.Now())).wantError(t, http.StatusUnauthorized, "signature_invalid")
	}
	for range 3 {
		e.do(http.MethodPost, ack, withBearer(a.token)).wantError(t, http.StatusUnauthorized, "signature_required")
	}
	e.clock.Advance(time.Minute) // the next minute: a new entry
	e.do(http.MethodPost, ack, withBearer(a.token), forged.sign(e.clock.Now())).wantError(t, http.StatusUnauthorized, "signature_invalid")

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one round, then the final flush of everything
	e.srv.RunSignatureAudit(ctx, func(err error) { t.Errorf("flush: %v", err) })

	got, err := e.reg.ListAudit(adminCtx(), registry.AuditListParams{Action: registry.AuditSignatureRefused})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("want 2 entries (one per minute), got %+v", got)
	}
	var reasons []string
	for _, g := range got {
		if g.TargetKind != "credential" || g.TargetID == "" || g.ClusterID != a.clusterID {
			t.Fatalf("entry %+v", g)
		}
		reasons = append(reasons, g.Reason)
	}
	all := strings.Join(reasons, " | ")
	if !strings.Contains(all, "53 signed writes refused") || !strings.Contains(all, "signature_invalid: 50") ||
		!strings.Contains(all, "signature_required: 3") || !strings.Contains(all, "1 signed writes refused") {
		t.Fatalf("reasons: %s", all)
	}
}
