package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

// TestPublicOperatorCompatibility replays what the public operator sends,
// byte for byte in headers and bodies (PROTOCOL.md, "Compatibility first"),
// and checks the exact status codes it needs: 200 for register, jobs and
// rotate; 204 for ack, status, result and events; 409 on ack and result
// (which it treats as success). Requests are built by hand: only
// Authorization, Accept and (with a body) Content-Type, as the operator sets
// them; Go's transport adds Host, User-Agent, Content-Length and
// Accept-Encoding, as it does for the operator, which is a Go program.
func TestPublicOperatorCompatibility(t *testing.T) {
	e := newEnv(t)
	c, regToken := e.cluster("cluster-prod-1")

	send := func(method, path, bearer, body string) *response {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, e.url+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Accept", mediaV1)
		if body != "" {
			req.Header.Set("Content-Type", mediaV1)
		}
		return e.send(req)
	}

	// Register: the token in the header AND the body, and a clusterId hint
	// that does not match the cluster the token is bound to.
	r := send("POST", "/api/agent/register", regToken,
		`{"clusterId":"cluster-prod-1","registrationToken":"`+regToken+`"}`)
	r.want(t, http.StatusOK)
	var reg struct {
		ClusterID string  `json:"clusterId"`
		Token     string  `json:"token"`
		ExpiresAt *string `json:"expiresAt"`
	}
	r.decode(t, &reg)
	if reg.ClusterID != c.ID || reg.Token == "" {
		t.Fatalf("register answer %s: want clusterId %s and a token", r.body, c.ID)
	}
	if reg.ExpiresAt != nil {
		if _, err := time.Parse(time.RFC3339, *reg.ExpiresAt); err != nil {
			t.Fatalf("expiresAt %q is not RFC 3339 (the operator's decoder breaks): %v", *reg.ExpiresAt, err)
		}
	}
	token := reg.Token
	id := reg.ClusterID

	// Jobs: wait=0 and an empty queue.
	r = send("GET", "/api/agent/jobs?cluster="+id+"&wait=0", token, "")
	r.want(t, http.StatusOK)
	if got := strings.TrimSpace(string(r.body)); got != `{"jobs":[]}` {
		t.Errorf("empty poll = %s, want {\"jobs\":[]}", got)
	}

	job := e.submit(id)
	expiring, _, err := e.reg.SubmitJob(adminCtx(), registry.JobSubmission{
		ClusterID: id, Kind: registry.KindApply, ExpiresIn: time.Minute, IdempotencyKey: "configmap/default/late@1",
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late","namespace":"default"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	// It names no limit, so each poll hands it one job, oldest first
	// (TestPublicOperatorReplicasApplyEachJobOnce says why).
	var polled []map[string]any
	for range 2 {
		r = send("GET", "/api/agent/jobs?cluster="+id+"&wait=30", token, "")
		r.want(t, http.StatusOK)
		var jobs struct {
			Jobs []map[string]any `json:"jobs"`
		}
		r.decode(t, &jobs)
		if len(jobs.Jobs) != 1 {
			t.Fatalf("poll = %s, want one job", r.body)
		}
		polled = append(polled, jobs.Jobs...)
	}
	if polled[0]["id"] != job || polled[1]["id"] != expiring.ID {
		t.Fatalf("polls handed out %v then %v, want %s then %s", polled[0]["id"], polled[1]["id"], job, expiring.ID)
	}
	for _, j := range polled {
		for _, f := range []string{"createdAt", "expiresAt"} {
			v, ok := j[f]
			if !ok {
				continue
			}
			s, isString := v.(string)
			if _, err := time.Parse(time.RFC3339, s); !isString || err != nil {
				t.Errorf("job %v: %s = %#v, want an RFC 3339 string or absent", j["id"], f, v)
			}
		}
	}

	// Ack with no body and no Content-Type.
	send("POST", "/api/agent/jobs/"+job+"/ack", token, "").wantNoContent(t)
	// A second ack: 409, which the operator treats as success.
	if got := send("POST", "/api/agent/jobs/"+job+"/ack", token, "").status; got != http.StatusConflict {
		t.Errorf("second ack = %d, want 409", got)
	}

	// Status with a condition whose lastTransitionTime is null.
	send("POST", "/api/agent/jobs/"+job+"/status", token,
		`{"phase":"Reconciling","conditions":[{"type":"Reconciling","status":"True","reason":"HelmReleaseUpgrading","message":"Flux is upgrading","lastTransitionTime":null}],"message":"Flux is upgrading","timestamp":"2026-05-28T10:00:05Z"}`).
		wantNoContent(t)
	send("POST", "/api/agent/jobs/"+job+"/result", token,
		`{"outcome":"succeeded","appliedRef":{"apiVersion":"apps.vworkspace.io/v1alpha1","kind":"ApplicationInstance","namespace":"org-myteam","name":"nextcloud-myteam","uid":"8c9e5a3d-2e9c-4c8a-9c0a-1e3a4b5c6d7e","generation":7},"timestamp":"2026-05-28T10:00:15Z"}`).
		wantNoContent(t)
	if got := send("POST", "/api/agent/jobs/"+job+"/result", token, `{"outcome":"succeeded","timestamp":"2026-05-28T10:00:16Z"}`).status; got != http.StatusConflict {
		t.Errorf("second result = %d, want 409", got)
	}

	// The expired-job path: it acks an expired job (409), then reports noop.
	e.clock.Advance(2 * time.Minute)
	if got := send("POST", "/api/agent/jobs/"+expiring.ID+"/ack", token, "").status; got != http.StatusConflict {
		t.Errorf("ack of an expired job = %d, want 409", got)
	}
	send("POST", "/api/agent/jobs/"+expiring.ID+"/result", token, `{"outcome":"noop","error":"expired","timestamp":"2026-05-28T10:02:00Z"}`).
		wantNoContent(t)

	// Heartbeat event: namespace "" and no conditions.
	send("POST", "/api/agent/events", token,
		`{"events":[{"kind":"ClusterHeartbeat","resourceRef":{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Cluster","namespace":"","name":"`+id+`"},"timestamp":"2026-05-28T10:02:30Z"}]}`).
		wantNoContent(t)
	// A condition transition with an eventKey and a null lastTransitionTime.
	transition := `{"events":[{"kind":"ConditionTransition","eventKey":"ai/org-myteam/nextcloud-myteam/Ready","resourceRef":{"apiVersion":"apps.vworkspace.io/v1alpha1","kind":"ApplicationInstance","namespace":"org-myteam","name":"nextcloud-myteam","uid":"8c9e5a3d"},"conditions":[{"type":"Ready","status":"False","reason":"ChartUnreachable","message":"chart repository unreachable","lastTransitionTime":null}],"timestamp":"2026-05-28T10:02:31Z"}]}`
	send("POST", "/api/agent/events", token, transition).wantNoContent(t)
	send("POST", "/api/agent/events", token, transition).wantNoContent(t) // a duplicate is still 204

	// Rotate with {}; the answer has token and an RFC 3339 expiresAt.
	r = send("POST", "/api/agent/credentials/rotate", token, `{}`)
	r.want(t, http.StatusOK)
	var rot struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expiresAt"`
	}
	r.decode(t, &rot)
	if _, err := time.Parse(time.RFC3339, rot.ExpiresAt); rot.Token == "" || err != nil {
		t.Fatalf("rotate answer %s: want token and an RFC 3339 expiresAt", r.body)
	}
	// Some components keep the OLD token until restart: it keeps working
	// inside the grace, for every call the operator makes.
	e.clock.Advance(23 * time.Hour)
	job2 := e.submit(id)
	r = send("GET", "/api/agent/jobs?cluster="+id+"&wait=0", token, "")
	r.want(t, http.StatusOK)
	send("POST", "/api/agent/jobs/"+job2+"/ack", token, "").wantNoContent(t)
	send("POST", "/api/agent/jobs/"+job2+"/status", token, `{"phase":"Applying","conditions":[],"message":"","timestamp":"2026-05-29T09:00:00Z"}`).wantNoContent(t)
	send("POST", "/api/agent/jobs/"+job2+"/result", token, `{"outcome":"failed","error":"HelmReleaseFailed: timeout","timestamp":"2026-05-29T09:00:01Z"}`).wantNoContent(t)
	send("POST", "/api/agent/events", token, fmt.Sprintf(`{"events":[{"kind":"ClusterHeartbeat","resourceRef":{"apiVersion":"ops.vworkspace.io/v1alpha1","kind":"Cluster","namespace":"","name":%q},"timestamp":"2026-05-29T09:00:02Z"}]}`, id)).wantNoContent(t)
	send("GET", "/api/agent/jobs?cluster="+id+"&wait=0", rot.Token, "").want(t, http.StatusOK)

	// The job went through, and the heartbeat recorded the cluster as seen.
	got, err := e.reg.GetJob(context.Background(), job2)
	if err != nil || got.State != registry.JobFailed {
		t.Errorf("job2 = %+v, %v; want failed", got, err)
	}
	cl, err := e.reg.GetCluster(context.Background(), id)
	if err != nil || cl.Status.LastHeartbeatAt.IsZero() {
		t.Errorf("cluster status %+v, %v: want a heartbeat", cl.Status, err)
	}
}
