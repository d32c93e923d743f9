package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/maintenance"
	"github.com/tetherhq/tether/server"
	"github.com/tetherhq/tether/webhook"
)

// serveEnv is what serve's background services run on.
type serveEnv struct {
	a         *app
	srv       *server.Server
	log       *slog.Logger
	opts      serveOptions
	retention registry.RetentionConfig
	certs     *certReloader // nil without --tls-cert
	cas       *clientCAs    // nil without --tls-cert
	diagLn    net.Listener  // nil without --diag-listen
	ssh       *sshConsole   // nil without --ssh-listen
}

// serveServices are the background services serve runs beside the agent API,
// under one maintenance.Maintainer (see startAgentAPI): it starts them once
// the listeners are bound, restarts one that fails after a backoff, reports
// them as tether_service_up, and stops them once the agent API has drained,
// before the store is closed.
//
// A new background service is one more entry here: a registry service (a
// loop over Registry that reports its own errors) as maintenance.Loop, a
// listener or anything that can fail as maintenance.Func, whose error makes
// the maintainer restart it. Its name is the service label of the metrics.
func serveServices(e serveEnv) []maintenance.Service {
	a, srv, log := e.a, e.srv, e.log
	svcs := []maintenance.Service{
		maintenance.Loop("reaper", func(ctx context.Context) {
			registry.NewReaper(a.reg, registry.ReaperConfig{}).Run(ctx, srv.RecordReap)
		}),
		maintenance.Loop("pruner", func(ctx context.Context) {
			registry.NewPruner(a.reg, registry.PrunerConfig{}).Run(ctx, srv.RecordPrune)
		}),
		maintenance.Loop("retention", func(ctx context.Context) {
			registry.NewRetention(a.reg, e.retention).Run(ctx, func(rep registry.RetentionReport, err error) {
				srv.RecordRetention(rep)
				switch {
				case err != nil:
					log.Warn("retention failed; retrying at the next run", "err", registry.ErrorMessage(err))
				case rep.Total() > 0:
					log.Info("retention deleted what is kept no longer", "jobs", rep.Jobs, "audit_entries", rep.Audit, "webhook_deliveries", rep.WebhookDeliveries,
						"idempotency_keys", rep.IdempotencyKeys)
				}
			})
		}),
		maintenance.Loop("search-merge", func(ctx context.Context) {
			registry.NewSearchMerger(a.reg, registry.SearchMergerConfig{}).Run(ctx, func(_ registry.SearchMergeReport, err error) {
				if err != nil {
					log.Warn("merging the job search index failed; retrying at the next run", "err", registry.ErrorMessage(err))
				}
			})
		}),
		maintenance.Loop("rollouts", func(ctx context.Context) {
			registry.NewRolloutService(a.reg, 0).Run(ctx, func(_ int, err error) {
				if err != nil {
					log.Warn("advancing rollouts failed; retrying", "err", registry.ErrorMessage(err))
				}
			})
		}),
		maintenance.Loop("signature-audit", func(ctx context.Context) {
			srv.RunSignatureAudit(ctx, func(err error) {
				log.Warn("auditing refused signatures failed; retrying", "err", registry.ErrorMessage(err))
			})
		}),
		maintenance.Loop("webhook-sender", func(ctx context.Context) {
			webhookSender(a, srv, log).Run(ctx, func(err error) {
				log.Warn("sending webhooks failed; retrying", "err", registry.ErrorMessage(err))
			})
		}),
	}
	if e.opts.reloadOnHangup {
		svcs = append(svcs, maintenance.Loop("sighup-reload", func(ctx context.Context) { reloadOnHangup(ctx, e) }))
	}
	if e.cas != nil {
		svcs = append(svcs, maintenance.Loop("client-ca-refresh", func(ctx context.Context) { e.cas.run(ctx, e.opts.caRefresh) }))
	}
	if e.diagLn != nil {
		svcs = append(svcs, diagService(e))
	}
	if e.ssh != nil {
		// Not restarted if it ends early: its listener is gone with it.
		svcs = append(svcs, maintenance.Loop("ssh-console", func(ctx context.Context) { e.ssh.run(ctx, srv) }))
	}
	if interval := watchdogInterval(log); interval > 0 {
		svcs = append(svcs, maintenance.Loop("systemd-watchdog", func(ctx context.Context) { runWatchdog(ctx, interval, srv.Handler(), log) }))
	}
	return svcs
}

// webhookSender sends the webhook deliveries, counting each attempt and
// logging those that failed.
func webhookSender(a *app, srv *server.Server, log *slog.Logger) *webhook.Sender {
	return webhook.New(a.reg, webhook.Config{Report: func(at webhook.Attempt) {
		srv.RecordWebhookDelivery(at.Event, at.Status, at.Err)
		if at.Err != nil || at.Status < 200 || at.Status > 299 {
			// The receiver by origin only: a URL's path and query often
			// hold the receiver's own secret.
			attrs := []any{"webhook", at.WebhookName, "webhook_id", at.Webhook, "delivery", at.Delivery}
			if at.Message != at.Delivery {
				attrs = append(attrs, "message", at.Message) // a redelivery: what the receiver sees as webhook-id
			}
			attrs = append(attrs, "event", at.Event, "receiver", at.Receiver, "status", at.Status)
			if at.Err != nil {
				attrs = append(attrs, "err", at.Err.Error(), "detail", at.Detail)
			}
			log.Warn("webhook delivery attempt failed; retried with backoff until 24 h after the change, then marked failed (tether webhook deliveries shows it)", attrs...)
		}
	}})
}

// reloadOnHangup reloads the certificate and the client CAs (a renewal hook
// sends SIGHUP), and the key file (after tether keys rotate), on each SIGHUP
// until ctx ends.
func reloadOnHangup(ctx context.Context, e serveEnv) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if e.certs != nil {
				e.certs.reload("SIGHUP")
				e.cas.refresh(ctx, "SIGHUP")
			}
			if kf, ok := e.a.reg.Config().Keyring.(*registry.KeyFile); ok {
				if err := kf.Reload(); err != nil {
					e.log.Error("key file not reloaded", "err", registry.ErrorMessage(err))
				} else {
					e.log.Info("key file reloaded", "trigger", "SIGHUP")
				}
			}
		}
	}
}

// diagService serves --diag-listen on the listener bound at start (so that a
// taken address is refused before serve reports ready); when that listener
// fails, the maintainer restarts the service, which binds the address anew.
func diagService(e serveEnv) maintenance.Service {
	ln := e.diagLn
	return maintenance.Func("diag-listener", func(ctx context.Context) error {
		if ln == nil {
			var err error
			var lc net.ListenConfig
			if ln, err = lc.Listen(ctx, "tcp", e.opts.diagListen); err != nil {
				return err
			}
		}
		defer func() { ln = nil }() // a restart binds again
		return e.srv.ServeDiag(ctx, ln)
	})
}
