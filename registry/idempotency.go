package registry

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"
)

// DefaultIdempotencyRetention is Config.IdempotencyRetention's default: a
// day, as payment APIs keep theirs, long enough for any producer's retries
// after a timeout, an outage or a redeploy.
const DefaultIdempotencyRetention = 24 * time.Hour

// keyUntil is until when a job created at now keeps its idempotency key
// whatever its state: zero when it has no key, or when keys answer open
// jobs only (a negative retention).
func (r *Registry) keyUntil(key string, now time.Time) time.Time {
	if key == "" || r.cfg.IdempotencyRetention < 0 {
		return time.Time{}
	}
	return now.Add(r.cfg.IdempotencyRetention)
}

// KeyOfDeletedJob is a store's refusal of a submission whose idempotency key
// still answers a job that has since been deleted (by an admin, or by
// retention): the key stays taken until it expires, so that a producer's
// retry never runs the request a second time.
func KeyOfDeletedJob(key, jobID string, until time.Time) error {
	return Errorf(CodeConflict, "idempotency key %q answers job %s, which has been deleted; the key stays taken until %s so that a retried submission never runs twice: submit with another key",
		key, jobID, until.UTC().Format(time.RFC3339))
}

// checkReplay refuses a submission whose idempotency key answered job j
// when it is not the request j was made from: another kind or another
// payload (payment APIs answer the same). JSON that differs only in
// spacing or the order of an object's keys is the same payload.
func (r *Registry) checkReplay(s JobSubmission, j *Job) error {
	if s.Kind == j.Kind {
		stored, err := r.openPayload(j)
		if err != nil {
			return err
		}
		if sameJSON(s.Payload, stored) {
			return nil
		}
	}
	return Errorf(CodeConflict, "idempotency key %q was used for job %s with another kind or payload; a key stands for one request: send a different request with a new key (the job: tether job get %s)",
		s.IdempotencyKey, j.ID, j.ID)
}

// sameJSON reports whether a and b are the same JSON value. Numbers compare
// as written (1 and 1.0 differ), which is stricter than need be but never
// takes two requests for one.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if decodeJSON(a, &x) != nil || decodeJSON(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func decodeJSON(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
