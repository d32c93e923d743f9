package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tetherhq/tether/registry"
)

// Codes only the HTTP layer produces. They share the registry's Code type so
// that one table maps every code to its status, and so that an agent sees one
// closed set of machine codes.
const (
	CodeNotAcceptable        registry.Code = "not_acceptable"         // Accept names no version we serve
	CodeUnsupportedMediaType registry.Code = "unsupported_media_type" // body Content-Type not JSON
	CodeMethodNotAllowed     registry.Code = "method_not_allowed"     // known path, other method
	CodeSignatureRequired    registry.Code = "signature_required"     // hmac credential, unsigned write
	CodeSignatureInvalid     registry.Code = "signature_invalid"      // signature does not match
	CodeSignatureExpired     registry.Code = "signature_expired"      // timestamp outside the window
	CodeSignatureReplayed    registry.Code = "signature_replayed"     // same signature seen inside the window
	CodeRequestTimeout       registry.Code = "request_timeout"        // the body did not arrive in time
	CodeTooManyPolls         registry.Code = "too_many_polls"         // a credential or address holds its most long-polls
	CodeTooManyConnections   registry.Code = "too_many_connections"   // an address holds its most connections
	CodePreconditionRequired registry.Code = "precondition_required"  // a conditional write without If-Match

	CodeClientCertificateRequired registry.Code = "client_certificate_required" // the cluster's policy requires mTLS
)

// statusOf is the one table from error codes to HTTP statuses. A code missing
// from it is a bug, answered as 500.
var statusOf = map[registry.Code]int{
	registry.CodeInvalid:            http.StatusBadRequest,
	registry.CodeCapabilityRequired: http.StatusBadRequest,
	registry.CodeInvalidOutcome:     http.StatusBadRequest,
	registry.CodeErrorRequired:      http.StatusBadRequest,
	registry.CodeNoCA:               http.StatusBadRequest,

	registry.CodeUnauthorized:             http.StatusUnauthorized,
	registry.CodeRegistrationTokenInvalid: http.StatusUnauthorized,
	CodeSignatureRequired:                 http.StatusUnauthorized,
	CodeSignatureInvalid:                  http.StatusUnauthorized,
	CodeSignatureExpired:                  http.StatusUnauthorized,
	CodeSignatureReplayed:                 http.StatusUnauthorized,
	CodeClientCertificateRequired:         http.StatusUnauthorized,

	registry.CodeForbidden:       http.StatusForbidden,
	registry.CodeClusterDisabled: http.StatusForbidden,

	registry.CodeNotFound:    http.StatusNotFound,
	registry.CodeJobNotFound: http.StatusNotFound,

	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeNotAcceptable:    http.StatusNotAcceptable,
	CodeRequestTimeout:   http.StatusRequestTimeout,

	CodePreconditionRequired: http.StatusPreconditionRequired,

	registry.CodeConflict:              http.StatusConflict,
	registry.CodeAlreadyClaimed:        http.StatusConflict,
	registry.CodeJobClosed:             http.StatusConflict,
	registry.CodeStaleClaim:            http.StatusConflict,
	registry.CodeJobCanceled:           http.StatusConflict,
	registry.CodeResultAlreadyRecorded: http.StatusConflict,
	registry.CodeJobNotFinished:        http.StatusConflict,

	registry.CodeNamespaceNotAllowed:         http.StatusUnprocessableEntity,
	registry.CodeCatalogEntryNotAllowed:      http.StatusUnprocessableEntity,
	registry.CodeOperationTemplateNotAllowed: http.StatusUnprocessableEntity,
	registry.CodePublicKeyRequired:           http.StatusUnprocessableEntity,

	registry.CodeTooLarge:    http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	registry.CodeRateLimited: http.StatusTooManyRequests,
	CodeTooManyPolls:         http.StatusTooManyRequests,
	CodeTooManyConnections:   http.StatusTooManyRequests,

	registry.CodeInternal:    http.StatusInternalServerError,
	registry.CodeUnavailable: http.StatusServiceUnavailable,
}

// HTTPStatus returns the HTTP status of an error code (500 for a code the
// table does not know).
func HTTPStatus(code registry.Code) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is the shape of every non-2xx answer (seed 000).
type errorBody struct {
	Error     registry.Code `json:"error"`
	Message   string        `json:"message"`
	RequestID string        `json:"requestId"`
}

// public is what a caller is told of err. A store's failure carries details
// for the operator (the database's address, its file's path, the driver's
// words), which the access log records under the request id; the caller,
// often an agent in another organization's cluster or anyone reaching an
// unauthenticated probe, learns only what failed.
func public(err error) error {
	var e *registry.Error
	if !errors.As(err, &e) {
		return errf(registry.CodeInternal, "the server failed while handling this request; its log has the details under this request id")
	}
	if e.Code == registry.CodeInternal {
		return errf(registry.CodeInternal, "the server failed while handling this request; its log has the details under this request id")
	}
	// CodeUnavailable messages say what failed and never where (the
	// registry.Store contract): "the database is read-only" tells an agent's
	// operator that waiting is the remedy. Its cause stays in the log.
	return err
}

// driverCause is what lies under err's registry errors: the driver's or the
// system's words (a file's path, a database's address), for the log only.
// Nil when err has no such cause.
func driverCause(err error) error {
	var cause error
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*registry.Error); !ok && e != err {
			cause = e
			break
		}
	}
	return cause
}

// unavailableRetryAfter is the Retry-After of a 503: the store's failures
// (read-only, disk full, database down or locked) last seconds at least, and
// an agent fleet retrying at once would only add load; readiness is checked
// again every registry.ReadyCacheTTL.
const unavailableRetryAfter = 5 * time.Second

// writeError answers with err's status and the error shape. The request id is
// the recorder's (the one its X-Request-Id header carries).
func writeError(w http.ResponseWriter, err error) {
	err = public(err)
	code := registry.ErrorCode(err)
	requestID := w.Header().Get(headerRequestID)
	if rec, ok := w.(*recorder); ok && rec.requestID != "" {
		requestID = rec.requestID
	}
	// Messages are read by people, often through curl: <token> stays
	// <token>, not \u003ctoken\u003e (the body is JSON, never HTML).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(errorBody{Error: code, Message: registry.ErrorMessage(err), RequestID: requestID})
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	h := w.Header()
	h.Set("Content-Type", mediaTypeOf(w))
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	status := HTTPStatus(code)
	switch {
	case status == http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="tether"`)
	case status == http.StatusServiceUnavailable && h.Get("Retry-After") == "":
		h.Set("Retry-After", fmt.Sprint(retryAfterSeconds(unavailableRetryAfter)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// errf is registry.Errorf, for brevity in handlers.
func errf(code registry.Code, format string, args ...any) error {
	return registry.Errorf(code, format, args...)
}

// mediaTypeOf is the media type of the API that w answers for.
func mediaTypeOf(w http.ResponseWriter) string {
	if rec, ok := w.(*recorder); ok && rec.mediaType != "" {
		return rec.mediaType
	}
	return mediaTypeV1
}
