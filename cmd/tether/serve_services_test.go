package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/registry/maintenance"
	"github.com/tetherhq/tether/server"
)

// When the diagnostics listener fails, the maintainer reports it down, logs
// why, and after its backoff the service binds the address again and serves
// /metrics, which says it failed once.
func TestDiagListenerIsRestartedAfterItFails(t *testing.T) {
	t.Parallel()
	reg := openRegistry(t, newDB(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	clock := clocktest.New()
	m := maintenance.New(maintenance.Config{Logger: log, Clock: clock})
	srv := server.New(reg, server.Config{Logger: log, Services: m.Status})
	m.Add(diagService(serveEnv{srv: srv, log: log, opts: serveOptions{diagListen: addr}, diagLn: ln}))
	m.Start(context.Background())
	defer m.Stop()

	metrics := func() string {
		code, body := httpGet(t, "http://"+addr+"/metrics")
		if code != http.StatusOK {
			t.Fatalf("GET /metrics on the diagnostics listener = %d", code)
		}
		return string(body)
	}
	if body := metrics(); !strings.Contains(body, `tether_service_up{service="diag-listener"} 1`) {
		t.Fatalf("metrics do not say the diagnostics listener is up:\n%s", body)
	}
	ln.Close() // the listener fails under the service
	done := make(chan struct{})
	timer := time.AfterFunc(waitTimeout, func() { close(done) })
	defer timer.Stop()
	if !clock.WaitTimers(1, done) {
		t.Fatalf("the failed listener was not scheduled for a restart; log:\n%s", logs.String())
	}
	if st := m.Status()[0]; st.Up() || st.State != maintenance.StateRestarting || st.Failures != 1 {
		t.Errorf("status after the listener failed = %+v, want restarting after 1 failure", st)
	}
	if !strings.Contains(logs.String(), `background service failed; restarting it after a backoff" service=diag-listener`) {
		t.Errorf("the failure is not logged:\n%s", logs.String())
	}
	clock.Advance(maintenance.DefaultMinBackoff)
	eventually(t, "the diagnostics listener to serve again", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil && m.Status()[0].Up()
	})
	if body := metrics(); !strings.Contains(body, `tether_service_up{service="diag-listener"} 1`) ||
		!strings.Contains(body, `tether_service_failures_total{service="diag-listener"} 1`) {
		t.Errorf("metrics after the restart:\n%s", body)
	}
}
