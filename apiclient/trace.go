package apiclient

import "context"

type traceparentKey struct{}

// WithTraceparent returns a context whose requests carry traceparent (a
// Job's Traceparent) in the W3C traceparent header, so that tether puts
// their spans in the job's trace. Give it to Ack, Status, Heartbeat and
// Result for the job; an empty traceparent sends none.
func WithTraceparent(ctx context.Context, traceparent string) context.Context {
	return context.WithValue(ctx, traceparentKey{}, traceparent)
}
