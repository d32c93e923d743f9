package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestAdminAPISaysWhetherTheAgentRotated: tether cannot make an agent
// rotate, so the admin API says what it knows. A credential's answer says
// when its agent last rotated (null: never since it registered); forcing a
// rotation of an agent that never rotated answers a warning naming when it
// will stop working; and when it does stop, the log line of its refused
// request names the cluster and the credential, never the token.
func TestAdminAPISaysWhetherTheAgentRotated(t *testing.T) {
	e := newEnv(t)
	admin := e.adminToken("ops", registry.RoleAdmin, "")
	c, regToken := e.cluster("operator")
	op := e.register(regToken) // as the public operator: no capabilities, never rotates

	type credential struct {
		ID             string     `json:"id"`
		AgentRotatedAt *time.Time `json:"agentRotatedAt"`
	}
	list := func() []map[string]json.RawMessage {
		t.Helper()
		r := e.api("GET", "/clusters/operator/credentials", admin, nil)
		r.want(t, http.StatusOK)
		return decodeAs[page[map[string]json.RawMessage]](t, r).Items
	}
	creds := list()
	if len(creds) != 1 || string(creds[0]["agentRotatedAt"]) != "null" {
		t.Fatalf("credentials %v: want one with agentRotatedAt null (never)", creds)
	}
	credID := strings.Trim(string(creds[0]["id"]), `"`)

	r := e.api("POST", "/clusters/operator/credentials/rotate", admin, map[string]string{"reason": "drill"})
	r.want(t, http.StatusOK)
	var forced struct {
		Credentials          int       `json:"credentials"`
		RotationGraceSeconds int64     `json:"rotationGraceSeconds"`
		GraceUntil           time.Time `json:"graceUntil"`
		Warning              string    `json:"warning"`
	}
	r.decode(t, &forced)
	stops := e.clock.Now().Add(registry.DefaultRotationGrace)
	want := "the agent of operator (" + c.ID + ") has never rotated its credential; if it does not rotate within the grace (24h) it will stop working at " + stops.Format(time.RFC3339)
	if forced.Credentials != 1 || !forced.GraceUntil.Equal(stops) || !strings.HasPrefix(forced.Warning, want) {
		t.Fatalf("forced rotation answered %s; want 1 credential, graceUntil %s and the warning %q", r.body, stops.Format(time.RFC3339), want)
	}

	// The operator does not rotate: at the end of the grace it is refused,
	// and the log line says whose agent that is.
	e.clock.Advance(registry.DefaultRotationGrace + time.Second)
	op.poll(0).wantError(t, http.StatusUnauthorized, "unauthorized")
	var line string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, "status=401") && strings.Contains(l, "/api/agent/jobs") {
			line = l
		}
	}
	for _, want := range []string{"cluster=" + c.ID, "credential=" + credID, "credential_state=expired"} {
		if !strings.Contains(line, want) {
			t.Errorf("the 401's log line lacks %q: %s", want, line)
		}
	}
	if strings.Contains(e.logs.String(), op.token) || strings.Contains(e.logs.String(), "tether_cred_") {
		t.Error("the log holds the credential's token")
	}

	// An agent that rotates: its credentials say when, and forcing a
	// rotation warns of nothing.
	_, regToken = e.cluster("rotating")
	ag := e.register(regToken)
	ag.do(http.MethodPost, "/api/agent/credentials/rotate", withBody(`{}`)).want(t, http.StatusOK)
	r = e.api("GET", "/clusters/rotating/credentials", admin, nil)
	for _, cr := range decodeAs[page[credential]](t, r).Items {
		if cr.AgentRotatedAt == nil || !cr.AgentRotatedAt.Equal(e.clock.Now()) {
			t.Errorf("credential %s: agentRotatedAt %v, want %s (its agent rotated then)", cr.ID, cr.AgentRotatedAt, e.clock.Now())
		}
	}
	r = e.api("POST", "/clusters/rotating/credentials/rotate", admin, nil)
	r.want(t, http.StatusOK)
	if strings.Contains(string(r.body), "warning") {
		t.Errorf("forcing the rotation of an agent that rotates warned: %s", r.body)
	}
}
