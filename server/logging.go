package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/tetherhq/tether/registry"
)

const redacted = "[REDACTED]"

// NewLogger returns a logger writing to w in format "text" (the default) or
// "json", with secrets redacted by RedactHandler.
func NewLogger(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationsAsText}
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("log format %q is not one of text, json", format)
	}
	return slog.New(RedactHandler(h)), nil
}

// durationsAsText writes a duration as Go spells it ("1m30s"), in both
// formats: slog's JSON handler would write nanoseconds (90000000000), which
// no log reader takes for a duration.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// RedactHandler wraps h so that secrets never reach it, whatever a caller
// logs: registry.Secret values, Authorization and signature headers (as an
// attribute key or inside an http.Header), and any string that looks like a
// tether token (registry.LooksLikeSecret), including error texts and
// formatted values. It is the last line of defence; code should not log
// secrets in the first place.
func RedactHandler(h slog.Handler) slog.Handler {
	if r, ok := h.(*redactHandler); ok {
		return r
	}
	return &redactHandler{next: h}
}

type redactHandler struct{ next slog.Handler }

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	msg := r.Message
	if registry.LooksLikeSecret(msg) {
		msg = redacted
	}
	out := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i] = redactAttr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(clean)}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name)}
}

// sensitiveKeys are attribute keys (and header names) whose values are
// secrets whatever they look like.
func sensitiveKey(k string) bool {
	switch strings.ToLower(k) {
	case "authorization", "proxy-authorization", "x-agent-signature", "token", "hmackey", "hmac_key",
		"registrationtoken", "registration_token", "secret", "password", "cookie", "set-cookie":
		return true
	}
	return false
}

func redactAttr(a slog.Attr) slog.Attr {
	if sensitiveKey(a.Key) {
		return slog.String(a.Key, redacted)
	}
	v := a.Value
	if v.Kind() == slog.KindAny {
		// Secret is a LogValuer, but a value wrapped in an interface field
		// or a pointer might not be resolved by the next handler: catch it
		// here first.
		switch x := v.Any().(type) {
		case registry.Secret, *registry.Secret:
			return slog.String(a.Key, redacted)
		case http.Header:
			return slog.Any(a.Key, redactHeader(x))
		}
	}
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if registry.LooksLikeSecret(v.String()) {
			return slog.String(a.Key, redacted)
		}
	case slog.KindGroup:
		group := v.Group()
		clean := make([]slog.Attr, len(group))
		for i, g := range group {
			clean[i] = redactAttr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(clean...)}
	case slog.KindAny:
		x := v.Any()
		if hd, ok := x.(http.Header); ok {
			return slog.Any(a.Key, redactHeader(hd))
		}
		// Errors and arbitrary values are rendered as text by the handlers;
		// look at that text. fmt respects Secret's Formatter, so a Secret
		// field inside a struct is already redacted here.
		var s string
		if err, ok := x.(error); ok {
			s = err.Error()
		} else {
			s = fmt.Sprint(x)
		}
		if registry.LooksLikeSecret(s) {
			return slog.String(a.Key, redacted)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func redactHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		clean := make([]string, len(vs))
		for i, v := range vs {
			if sensitiveKey(k) || registry.LooksLikeSecret(v) {
				v = redacted
			}
			clean[i] = v
		}
		out[k] = clean
	}
	return out
}
