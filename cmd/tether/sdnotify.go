package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// systemd's service notification protocol (sd_notify), for Type=notify
// units: READY=1 once the listener is open and the store answers, a
// WATCHDOG=1 keep-alive while the request handlers answer, and STOPPING=1
// when shutdown begins. Outside systemd (no $NOTIFY_SOCKET) every call is a
// no-op, so serve behaves the same everywhere else.

// notifyReady tells systemd that serve is up: the listener is open and the
// store was checked (serve opens neither lazily).
func notifyReady(log *slog.Logger) {
	if sent, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		log.Warn("could not tell systemd that serve is ready", "err", err)
	} else if sent {
		log.Debug("told systemd that serve is ready")
	}
}

// notifyStopping tells systemd that a shutdown has begun, so that it does
// not take the drain for a hang.
func notifyStopping() { _, _ = daemon.SdNotify(false, daemon.SdNotifyStopping) }

// watchdogInterval is the unit's WatchdogSec (0 when it sets none, or sets
// one not understood, which is logged).
func watchdogInterval(log *slog.Logger) time.Duration {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("systemd watchdog setting not understood; no keep-alives sent", "err", err)
		return 0
	}
	return interval
}

// runWatchdog sends systemd's keep-alive at half its WatchdogSec (interval)
// while /healthz answers in time through the server's own handler: a
// deadlocked handler stack stops the pings and systemd restarts the service.
// The store is not part of it (that is /readyz): a database outage must not
// make systemd restart every replica in a loop.
func runWatchdog(ctx context.Context, interval time.Duration, h http.Handler, log *slog.Logger) {
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if healthy(h, interval/2) {
				_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
			} else {
				log.Error("/healthz did not answer in time; withholding systemd's watchdog keep-alive", "timeout", interval/2)
			}
		}
	}
}

// healthy reports whether h answers GET /healthz with 200 within timeout.
func healthy(h http.Handler, timeout time.Duration) bool {
	done := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		done <- rec.Code
	}()
	select {
	case code := <-done:
		return code == http.StatusOK
	case <-time.After(timeout):
		return false
	}
}
