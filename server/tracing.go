package server

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tetherhq/tether/registry"
)

// Tracing (Config.TracerProvider). A job's requests make one trace: the
// submit's span (a child of the producer's, when it sends a traceparent
// header) is stored with the job as its traceparent (registry.Job); a poll
// makes a "deliver job" span in the trace of each job it hands out; the
// agent gets the traceparent with the job and sends it back on its ack,
// status and result, whose spans are then children of the submit's. An
// agent that does not send it (the public operator) gets ack and result
// spans of their own, linked to the job's trace: the link comes from the
// job's row, so it holds whichever replica answers.
//
// Off (no provider), a request costs one nil check.

const tracerName = "github.com/tetherhq/tether/server"

// traceContext reads and writes W3C traceparent headers.
var traceContext = propagation.TraceContext{}

// startSpan starts the span of a traced route, before prepare so that a
// refusal is traced too.
func (s *Server) startSpan(c *call) {
	if s.tracer == nil || c.route.span == "" {
		return
	}
	ctx := traceContext.Extract(c.ctx, propagation.HeaderCarrier(c.r.Header))
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", c.r.Method),
		attribute.String("http.route", c.pattern),
		attribute.String("tether.operation", c.route.span),
	}
	if c.jobID != "" {
		attrs = append(attrs, attribute.String("tether.job.id", c.jobID))
	}
	c.ctx, c.span = s.tracer.Start(ctx, c.r.Method+" "+c.pattern,
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(c.start), trace.WithAttributes(attrs...))
}

// endSpan ends a request's span with its answer.
func (c *call) endSpan(status int) {
	if c.span == nil {
		return
	}
	c.span.SetAttributes(attribute.Int("http.response.status_code", status))
	if c.agent != nil {
		c.span.SetAttributes(attribute.String("tether.cluster.id", c.agent.Cluster.ID))
	}
	if c.err != nil {
		c.span.SetAttributes(attribute.String("tether.error.code", string(registry.ErrorCode(c.err))))
	}
	if status >= http.StatusInternalServerError {
		c.span.SetStatus(codes.Error, registry.ErrorMessage(c.err))
	}
	c.span.End()
}

// traceparent is the trace context a job submitted by this request carries:
// its span's; with tracing off, the producer's traceparent header, so that
// the agent's work still joins the producer's trace. Empty for none.
func (c *call) traceparent() string {
	sc := trace.SpanContextFromContext(c.ctx)
	if !sc.IsValid() {
		sc = trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.HeaderCarrier(c.r.Header)))
	}
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// spanContextOf reads a stored traceparent; invalid when there is none.
func spanContextOf(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	h := http.Header{}
	h.Set("traceparent", traceparent)
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), propagation.HeaderCarrier(h)))
}

// linkJobTrace links the span of an agent's request about j to j's trace,
// unless the agent put it there already (it sent the job's traceparent).
func (c *call) linkJobTrace(j *registry.Job) {
	if c.span == nil || j == nil {
		return
	}
	c.span.SetAttributes(attribute.Int("tether.job.attempt", j.Attempt))
	if sc := spanContextOf(j.Traceparent); sc.IsValid() && sc.TraceID() != c.span.SpanContext().TraceID() {
		c.span.AddLink(trace.Link{SpanContext: sc})
	}
}

// traceDeliveries records, in the trace of each job a poll hands out, a
// "deliver job" span linked to the poll's own span (a poll hands out jobs of
// many traces, so it can be the child of none).
func (s *Server) traceDeliveries(c *call, jobs []registry.DeliveredJob) {
	if c.span == nil {
		return
	}
	poll := trace.Link{SpanContext: c.span.SpanContext()}
	for i := range jobs {
		sc := spanContextOf(jobs[i].Traceparent)
		if !sc.IsValid() {
			continue
		}
		c.span.AddLink(trace.Link{SpanContext: sc})
		_, sp := s.tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), sc), "deliver job",
			trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(poll), trace.WithAttributes(
				attribute.String("tether.job.id", jobs[i].ID),
				attribute.String("tether.cluster.id", jobs[i].ClusterID),
				attribute.Int("tether.job.attempt", jobs[i].Attempt)))
		sp.End()
	}
}
