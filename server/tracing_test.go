package server_test

import (
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/server"
)

// withTracing gives the server a tracer provider that records every span in
// memory, synchronously.
func withTracing(t *testing.T) (envOption, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return func(c *server.Config) { c.TracerProvider = tp }, exp
}

func spanNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %v", len(found), name, spanNames(exp))
	}
	return found[0]
}

func spanNames(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		out = append(out, s.Name)
	}
	return out
}

// A job's submit, delivery, ack, status and result make one trace, a child of
// the producer's, when the agent sends back the traceparent it got with the
// job.
func TestTraceFollowsAJob(t *testing.T) {
	tracing, exp := withTracing(t)
	e := newEnv(t, tracing)
	tok := e.adminToken("ci", registry.RoleOperator, "")
	a := e.newAgent("edge-1", "lease")
	const producerTrace, producerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := e.api(http.MethodPost, "/jobs", tok, submitOf(a.clusterID), withHeader("traceparent", "00-"+producerTrace+"-"+producerSpan+"-01"))
	r.want(t, http.StatusAccepted)
	var job struct {
		ID          string `json:"id"`
		Traceparent string `json:"traceparent"`
	}
	r.decode(t, &job)

	submit := spanNamed(t, exp, "POST /api/admin/v1/jobs")
	if submit.SpanContext.TraceID().String() != producerTrace || submit.Parent.SpanID().String() != producerSpan {
		t.Fatalf("submit span in trace %s under %s, want the producer's %s under %s",
			submit.SpanContext.TraceID(), submit.Parent.SpanID(), producerTrace, producerSpan)
	}
	want := "00-" + producerTrace + "-" + submit.SpanContext.SpanID().String() + "-01"
	if job.Traceparent != want {
		t.Fatalf("the job's traceparent = %q, want the submit span's %q", job.Traceparent, want)
	}
	if got := polledTraceparents(t, a); len(got) != 1 || got[0] != want {
		t.Fatalf("polled traceparents %q, want [%s]", got, want)
	}
	back := withHeader("traceparent", want)
	a.ack(job.ID, back).wantNoContent(t)
	a.status(job.ID, back).wantNoContent(t)
	a.result(job.ID, `{"outcome":"succeeded"}`, back).wantNoContent(t)

	poll := spanNamed(t, exp, "GET /api/agent/jobs")
	deliver := spanNamed(t, exp, "deliver job")
	if deliver.Parent.SpanID() != submit.SpanContext.SpanID() || len(deliver.Links) != 1 || deliver.Links[0].SpanContext.SpanID() != poll.SpanContext.SpanID() {
		t.Fatalf("deliver span: parent %s, links %+v; want the submit's child linked to the poll", deliver.Parent.SpanID(), deliver.Links)
	}
	for _, name := range []string{"POST /api/agent/jobs/{id}/ack", "POST /api/agent/jobs/{id}/status", "POST /api/agent/jobs/{id}/result"} {
		s := spanNamed(t, exp, name)
		if s.SpanContext.TraceID().String() != producerTrace || s.Parent.SpanID() != submit.SpanContext.SpanID() {
			t.Errorf("%s: trace %s, parent %s; want the submit's child in trace %s", name, s.SpanContext.TraceID(), s.Parent.SpanID(), producerTrace)
		}
		if s.SpanKind != trace.SpanKindServer || len(s.Links) != 0 {
			t.Errorf("%s: kind %s, links %v", name, s.SpanKind, s.Links)
		}
	}
}

// An agent that does not send the traceparent back (the public operator)
// gets ack and result spans of their own, linked to the job's trace by the
// job's row: whichever replica answers.
func TestTraceLinksAgentsThatDoNotPropagate(t *testing.T) {
	tracing, exp := withTracing(t)
	e := newEnv(t, tracing)
	tok := e.adminToken("ci", registry.RoleOperator, "")
	a := e.newAgent("edge-1", "lease")
	var job struct {
		ID          string `json:"id"`
		Traceparent string `json:"traceparent"`
	}
	e.api(http.MethodPost, "/jobs", tok, submitOf(a.clusterID)).decode(t, &job)
	submit := spanNamed(t, exp, "POST /api/admin/v1/jobs")
	if submit.Parent.IsValid() {
		t.Fatalf("a submit without a traceparent header has parent %s", submit.Parent.SpanID())
	}
	a.ack(job.ID).wantNoContent(t)
	a.result(job.ID, `{"outcome":"succeeded"}`).wantNoContent(t)
	for _, name := range []string{"POST /api/agent/jobs/{id}/ack", "POST /api/agent/jobs/{id}/result"} {
		s := spanNamed(t, exp, name)
		if s.SpanContext.TraceID() == submit.SpanContext.TraceID() || len(s.Links) != 1 ||
			s.Links[0].SpanContext.SpanID() != submit.SpanContext.SpanID() {
			t.Errorf("%s: trace %s, links %+v; want a trace of its own linked to the submit span %s", name, s.SpanContext.TraceID(), s.Links, submit.SpanContext.SpanID())
		}
	}
}

// Requests that are not part of a job's life make no spans.
func TestTracingSpansOnlyJobRequests(t *testing.T) {
	tracing, exp := withTracing(t)
	e := newEnv(t, tracing)
	a := e.newAgent("edge-1")
	e.getMetrics().want(t, http.StatusOK)
	a.events(`{"events":[]}`)
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans (%v) for registration, metrics and events, want none", n, spanNames(exp))
	}
}
