package tracing_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tetherhq/tether/internal/tracing"
)

// collector is an OTLP/HTTP endpoint that counts the trace exports it gets.
type collector struct {
	mu    sync.Mutex
	paths []string
}

func newCollector(t *testing.T) (*collector, string) {
	c := &collector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.paths = append(c.paths, r.URL.Path)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func (c *collector) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

func clearEnv(t *testing.T) {
	t.Setenv(tracing.EnvEndpoint, "")
	t.Setenv(tracing.EnvTracesEndpoint, "")
}

func TestNoEndpointNoTracing(t *testing.T) {
	clearEnv(t)
	tp, err := tracing.Provider(context.Background(), "", nil)
	if err != nil || tp != nil {
		t.Fatalf("Provider without an endpoint = %v, %v; want nil (off)", tp, err)
	}
}

func TestEndpointExportsSpans(t *testing.T) {
	for _, how := range []string{"flag", tracing.EnvEndpoint} {
		t.Run(how, func(t *testing.T) {
			clearEnv(t)
			c, url := newCollector(t)
			flag := url + "/"
			if how != "flag" {
				t.Setenv(how, url)
				flag = ""
			}
			tp, err := tracing.Provider(context.Background(), flag, nil)
			if err != nil || tp == nil {
				t.Fatalf("Provider = %v, %v", tp, err)
			}
			_, span := tp.Tracer("test").Start(context.Background(), "submit")
			span.End()
			if err := tp.Shutdown(context.Background()); err != nil { // sends the batch
				t.Fatal(err)
			}
			if got := c.got(); len(got) != 1 || got[0] != "/v1/traces" {
				t.Fatalf("collector got %q, want one export to /v1/traces", got)
			}
		})
	}
}

func TestBadEndpointRefused(t *testing.T) {
	clearEnv(t)
	for _, bad := range []string{"otel-collector:4318", "ftp://x", "http://"} {
		if _, err := tracing.Provider(context.Background(), bad, nil); err == nil {
			t.Errorf("Provider(%q) accepted it", bad)
		}
	}
}
