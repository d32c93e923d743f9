package agent_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

// A job submitted over the admin API is traced from submit to result, and
// the reference agent hands the job's trace context to its command as
// TRACEPARENT and sends it back on its ack and result: one trace.
func TestAgentJoinsTheJobsTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	dir := t.TempDir()
	st, err := sqlite.Open(admin, filepath.Join(dir, "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, dir, st, tp)
	c, agentDir := e.cluster("prod", "lease")
	tok, err := e.reg.CreateAdminToken(admin, "ci", registry.RoleOperator, "", 0)
	if err != nil {
		t.Fatal(err)
	}

	body, _ := json.Marshal(map[string]any{"cluster": c.ID, "kind": "delete",
		"payload": json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","name":"c","namespace":"team-a"}`)})
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/admin/v1/jobs", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok.Secret.Reveal())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var job struct {
		ID          string `json:"id"`
		Traceparent string `json:"traceparent"`
	}
	err = json.NewDecoder(resp.Body).Decode(&job)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted || job.Traceparent == "" {
		t.Fatalf("submit: %d, %+v, %v", resp.StatusCode, job, err)
	}

	out := filepath.Join(dir, "traceparent")
	e.run(agentDir, `printf %s "$TRACEPARENT" > `+out, nil)
	e.waitJob(job.ID, "finished", terminal)
	got, err := os.ReadFile(out)
	if err != nil || string(got) != job.Traceparent {
		t.Fatalf("the command's TRACEPARENT = %q (%v), want the job's %q", got, err, job.Traceparent)
	}

	byName := map[string]sdktrace.ReadOnlySpan{}
	deadline := time.Now().Add(10 * time.Second)
	for len(byName) < 4 && time.Now().Before(deadline) {
		for _, s := range exp.GetSpans().Snapshots() {
			if s.SpanContext().TraceID().String() == job.Traceparent[3:35] {
				byName[s.Name()] = s
			}
		}
		time.Sleep(10 * time.Millisecond) // the result's span ends just after the job does
	}
	submit := byName["POST /api/admin/v1/jobs"]
	for _, name := range []string{"POST /api/admin/v1/jobs", "deliver job", "POST /api/agent/jobs/{id}/ack", "POST /api/agent/jobs/{id}/result"} {
		s, ok := byName[name]
		if !ok {
			t.Fatalf("no %q span in the job's trace; its spans: %v", name, keys(byName))
		}
		if name != "POST /api/admin/v1/jobs" && s.Parent().SpanID() != submit.SpanContext().SpanID() {
			t.Errorf("%s: parent %s, want the submit span %s", name, s.Parent().SpanID(), submit.SpanContext().SpanID())
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
