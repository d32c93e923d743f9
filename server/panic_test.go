package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/sqlite"
)

// A handler's panic is answered 500 in the error shape, with the request id
// in the header and the body, and logged; http.ErrAbortHandler still aborts.
func TestHandlerPanicIsAnswered500(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "tether.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := registry.New(st, registry.Config{})
	t.Cleanup(func() { reg.Close() })
	var logs bytes.Buffer
	s := New(reg, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s.routes["/boom"] = []*route{{pattern: "/boom", method: http.MethodGet, serve: func(*call) error { panic("boom") }}}
	s.routes["/abort"] = []*route{{pattern: "/abort", method: http.MethodGet, serve: func(*call) error { panic(http.ErrAbortHandler) }}}

	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/boom", nil))
	var body struct{ Error, RequestID string }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	if got, want := w.Code, http.StatusInternalServerError; got != want {
		t.Errorf("status = %d, want %d", got, want)
	}
	if id := w.Header().Get(headerRequestID); body.Error != string(registry.CodeInternal) || id == "" || body.RequestID != id {
		t.Errorf("error %q, requestId %q, X-Request-Id %q: want internal and the same id", body.Error, body.RequestID, id)
	}
	if !strings.Contains(logs.String(), "panic while handling a request") || !strings.Contains(logs.String(), "status=500") {
		t.Errorf("logs do not tell of the panic and its answer:\n%s", logs.String())
	}

	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", p)
		}
	}()
	s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/abort", nil))
	t.Error("ErrAbortHandler did not reach net/http")
}
