package apiclient

import (
	"errors"
	"fmt"
	"time"
)

// Error is a non-2xx answer from the server: its HTTP status, its machine
// code (the "error" field, e.g. "already_claimed") and its request id, which
// the server's logs carry too. Use errors.As to get one, or IsCode.
type Error struct {
	StatusCode int
	Code       string
	Message    string
	RequestID  string
	// RetryAfter is the server's Retry-After, on 429 and 503 answers.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("tether answered %d %s", e.StatusCode, e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RequestID != "" {
		msg += " (request " + e.RequestID + ")"
	}
	return msg
}

// IsCode reports whether err is an *Error with one of the codes.
func IsCode(err error, codes ...string) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	for _, c := range codes {
		if e.Code == c {
			return true
		}
	}
	return false
}

// Protocol error codes (PROTOCOL.md).
const (
	CodeUnauthorized        = "unauthorized"
	CodeForbidden           = "forbidden"
	CodeClusterDisabled     = "cluster_disabled"
	CodeRegistrationInvalid = "registration_token_invalid"
	CodeCapabilityRequired  = "capability_required"
	// CodeNoCertificateAuthority (400): a CSR was sent to a tether without a
	// CA; register (or rotate) again without one.
	CodeNoCertificateAuthority = "no_certificate_authority"
	// CodeClientCertificateRequired (401): the cluster requires mTLS and the
	// request came without a verified certificate naming it.
	CodeClientCertificateRequired = "client_certificate_required"
	CodeJobNotFound               = "job_not_found"
	CodeAlreadyClaimed            = "already_claimed"
	CodeJobClosed                 = "job_closed"
	CodeStaleClaim                = "stale_claim"
	CodeJobCanceled               = "job_canceled"
	CodeResultAlreadyRecorded     = "result_already_recorded"
	CodeRateLimited               = "rate_limited"
	// CodeTooManyPolls (429, with Retry-After): the credential, or the client
	// address, already holds as many long-polls as the server allows.
	CodeTooManyPolls = "too_many_polls"
	// Signed writes (the hmac extension).
	CodeSignatureRequired = "signature_required"
	CodeSignatureInvalid  = "signature_invalid"
	CodeSignatureExpired  = "signature_expired"
	CodeSignatureReplayed = "signature_replayed"
)

// Sentinel conditions, matched with errors.Is; the *Error behind each is
// still available with errors.As.
var (
	// ErrUnauthenticated: the credential was refused, and so was one rotation.
	// The agent must stop and surface Authenticated=False until an admin
	// gives it a new registration token.
	ErrUnauthenticated = errors.New("credential refused and rotation failed: re-register with a new one-time token")
	// ErrClockSkew: the server refused a signed request as too old or too
	// new: this machine's clock is more than 300 s from the server's.
	// Rotating would not help; fix the clock (NTP).
	ErrClockSkew = errors.New("the server refused the request's timestamp: this machine's clock differs from the server's by more than 300 s; fix the clock (NTP)")
	// ErrForbidden: the server refuses this agent (wrong cluster, or the
	// cluster is disabled). Not retried.
	ErrForbidden = errors.New("forbidden")
	// ErrJobGone: the job does not exist (any more). Nothing to do for it.
	ErrJobGone = errors.New("job not found")
	// ErrNotClaimed: an ack lost (another agent claimed the job, or it is
	// closed). Do not run the job.
	ErrNotClaimed = errors.New("job not claimed")
	// ErrJobCanceled: an admin canceled the job; stop working on it.
	ErrJobCanceled = errors.New("job canceled")
	// ErrStaleClaim: the claim was reclaimed or requeued; stop working on it.
	ErrStaleClaim = errors.New("claim is stale")
)

// classified wraps an *Error with the sentinel it stands for.
type classified struct {
	sentinel error
	err      *Error
}

func (c *classified) Error() string   { return c.sentinel.Error() + ": " + c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.sentinel, c.err} }
