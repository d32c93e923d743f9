package registry

import (
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Code classifies an error. The set is closed: server/ maps each code to one
// HTTP status in a single table, apiclient maps them back, and callers branch on
// codes with ErrorCode, never on message text. The agent-facing codes are the
// wire codes of PROTOCOL.md.
type Code string

const (
	// Generic codes.
	CodeInvalid      Code = "invalid"      // bad input; the message names the field and the rule
	CodeNotFound     Code = "not_found"    // no such record
	CodeConflict     Code = "conflict"     // compare-and-swap lost, or a uniqueness rule broken
	CodeUnauthorized Code = "unauthorized" // bearer credential unknown, expired or revoked
	CodeForbidden    Code = "forbidden"    // authenticated, but not for this cluster or job
	CodeUnavailable  Code = "unavailable"  // the store cannot serve now (closed, read-only, disk full, down, locked); retry later
	CodeInternal     Code = "internal"     // a bug or an I/O failure; details are logged, not shown
	CodeRateLimited  Code = "rate_limited" // too many requests; retry later
	CodeTooLarge     Code = "too_large"    // a body or batch over its limit

	// Protocol codes (PROTOCOL.md).
	CodeRegistrationTokenInvalid Code = "registration_token_invalid"
	CodeClusterDisabled          Code = "cluster_disabled"
	CodeCapabilityRequired       Code = "capability_required"
	CodeJobNotFound              Code = "job_not_found"
	CodeAlreadyClaimed           Code = "already_claimed"
	CodeJobClosed                Code = "job_closed"
	CodeStaleClaim               Code = "stale_claim"
	CodeJobCanceled              Code = "job_canceled"
	CodeResultAlreadyRecorded    Code = "result_already_recorded"
	CodeInvalidOutcome           Code = "invalid_outcome"
	CodeErrorRequired            Code = "error_required"

	// Admin codes.
	CodeJobNotFinished Code = "job_not_finished" // delete refused: the job is queued or in progress; cancel it first
	// CodePublicKeyRequired: encrypted payloads turned on for a cluster
	// without a public key to encrypt to.
	CodePublicKeyRequired Code = "public_key_required"

	// Policy codes: a job refused by its cluster's allowlists, naming the
	// rule (seed 001's RPC error). IsPolicyRefusal recognizes them.
	CodeNamespaceNotAllowed         Code = "namespace_not_allowed"
	CodeCatalogEntryNotAllowed      Code = "catalog_entry_not_allowed"
	CodeOperationTemplateNotAllowed Code = "operation_template_not_allowed"
)

// IsPolicyRefusal reports whether err is a refusal by a cluster's
// allowlists (as opposed to a malformed payload).
func IsPolicyRefusal(err error) bool {
	switch ErrorCode(err) {
	case CodeNamespaceNotAllowed, CodeCatalogEntryNotAllowed, CodeOperationTemplateNotAllowed:
		return true
	}
	return false
}

// Error is the error type of the domain: a code, and a message meant for the
// person or program that made the request. Messages never contain secrets.
type Error struct {
	Code    Code
	Message string
	// Err is an underlying cause kept for logs (errors.Unwrap); it is not shown
	// to callers.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Code == CodeInternal {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message. A
// string argument longer than maxEchoed bytes is cut there: a message names
// the value it refuses, and a megabyte of it helps nobody (it would be sent
// back whole, and logged).
func Errorf(code Code, format string, args ...any) *Error {
	for i, a := range args {
		if s, ok := a.(string); ok && len(s) > maxEchoed {
			args = slices.Clone(args) // the caller's slice, when it passed one, stays as it was
			for j := i; j < len(args); j++ {
				if s, ok := args[j].(string); ok && len(s) > maxEchoed {
					args[j] = clipEchoed(s)
				}
			}
			break
		}
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// maxEchoed is how much of a value an error message repeats.
const maxEchoed = 256

// clipEchoed cuts s to at most maxEchoed bytes on a character boundary and
// says how long it was.
func clipEchoed(s string) string {
	cut := maxEchoed
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes in all)", s[:cut], len(s))
}

// Internal wraps an unexpected failure (I/O, a driver error) as CodeInternal.
// The message says what was being done; the cause stays in Err.
func Internal(err error, doing string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: CodeInternal, Message: doing, Err: err}
}

// ErrorCode returns the code of err, CodeInternal for an error that carries
// none, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the caller-facing message of err. Errors without a code
// are internal: their text may hold details not meant for callers, so a generic
// sentence is returned instead.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		if e.Code == CodeInternal {
			return "internal error: " + e.Message
		}
		return e.Message
	}
	return "internal error"
}
