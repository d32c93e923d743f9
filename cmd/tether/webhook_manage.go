package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/admin"
	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
)

// webhook edit, rotate-secret, test and redeliver: what an admin does to a
// webhook after creating it.

func newWebhookEditCmd(g *globals) *cobra.Command {
	var name, url string
	var events, allow []string
	var ifVersion int64
	cmd := &cobra.Command{
		Use:   "edit NAME [--name NEW] [--url URL] [--events TYPE[,TYPE]]",
		Short: "Change a webhook's name, URL or events (its secret and deliveries stay)",
		Long: `Change a webhook's name, URL or event types; what is not given stays. The
secret stays, and deliveries not yet sent go to the new URL.

A new URL is checked as at creation: internal addresses are refused unless
--webhook-allow-cidr allows them (on a local database, this command's own
--webhook-allow-cidr; over --server, the server's). With --if-version N the
edit is written only if the webhook is still at version N (tether webhook list
-o json shows it), as the admin API's PATCH does with If-Match.`,
		Example: `  tether webhook edit billing --url https://billing.example.com/v2/tether
  tether webhook edit pager --events credential.revoked,rollout.halted,rollout.completed
  tether webhook edit billing --name payments --if-version 3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			var edit registry.WebhookEdit
			if f.Changed("name") {
				edit.Name = &name
			}
			if f.Changed("url") {
				edit.URL = &url
			}
			if f.Changed("events") {
				edit.Events = events
				if edit.Events == nil {
					edit.Events = []string{} // --events "" is refused by the registry, by name
				}
			}
			if edit.Name == nil && edit.URL == nil && edit.Events == nil {
				return usagef("webhook edit needs at least one of --name, --url and --events")
			}
			allowed, err := registry.ParseWebhookAllow(allow)
			if err != nil {
				return usagef("--%s: %v", webhookAllowFlag, err)
			}
			if typed(f, webhookAllowFlag) {
				if server, _, err := remoteTarget(cmd, g); err == nil && server != "" {
					return usagef("--%s applies to a local database; over the admin API of %s, that server's own --%s decides", webhookAllowFlag, server, webhookAllowFlag)
				}
			}
			ctx := adminContext(cmd.Context())
			api, done, err := openAPIWith(cmd, g, registry.Config{WebhookAllow: allowed})
			if err != nil {
				return err
			}
			defer done()
			version := ifVersion
			if version == 0 {
				cur, err := api.GetWebhook(ctx, args[0])
				if err != nil {
					return err
				}
				version = cur.Version
			}
			w, err := api.UpdateWebhook(ctx, args[0], version, edit)
			if err != nil {
				return err
			}
			g.mutated = true
			if g.output == "json" {
				return printJSON(g.stdout, w)
			}
			_, err = fmt.Fprintf(g.stdout, "Webhook %s (%s) sends %s to %s (version %d).\n", w.Name, w.ID, strings.Join(w.Events, ", "), w.URL, w.Version)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "a new name")
	f.StringVar(&url, "url", "", "a new URL to POST to (http:// or https://)")
	f.StringSliceVar(&events, "events", nil, "the event types, all of them (comma-separated): "+strings.Join(registry.WebhookEvents, ", "))
	f.Int64Var(&ifVersion, "if-version", 0, "write only if the webhook is still at this version")
	f.StringSliceVar(&allow, webhookAllowFlag, nil, webhookAllowUsage+"; checked here on a local database")
	return cmd
}

func newWebhookRotateSecretCmd(g *globals) *cobra.Command {
	var overlap time.Duration
	cmd := &cobra.Command{
		Use:   "rotate-secret NAME [--overlap 24h]",
		Short: "Give a webhook a new signing secret (shown once); the old one signs too for an overlap",
		Long: `Give a webhook a new signing secret, shown only this once. For the overlap
(24h unless told, at most 30d), every delivery carries two signatures, one
with the new secret and one with the previous, in webhook-signature and in
X-Tether-Signature alike: switch the receiver to the new secret at any moment
of it. After the overlap only the new secret signs.

--overlap 0s retires the previous secret at once (a leaked one): deliveries
fail at the receiver until it has the new secret, and are retried meanwhile.
A rotation during an overlap retires the secret before the previous one.`,
		Example: `  tether webhook rotate-secret billing
  tether webhook rotate-secret billing --overlap 72h
  tether webhook rotate-secret billing --overlap 0s   # the old secret leaked`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := adminContext(cmd.Context())
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			w, secret, err := api.RotateWebhookSecret(ctx, args[0], overlap)
			if err != nil {
				return err
			}
			g.mutated = true
			if g.output == "json" {
				return printJSON(g.stdout, struct {
					*registry.Webhook
					Secret string `json:"secret"`
				}{w, secret.Reveal()}) // shown once, by design
			}
			previous := "The previous secret no longer signs deliveries."
			if !w.PreviousSecretUntil.IsZero() {
				previous = fmt.Sprintf("Deliveries are signed with both the new and the previous secret until %s:\nswitch the receiver to the new one before then.",
					w.PreviousSecretUntil.UTC().Format(time.RFC3339))
			}
			_, err = fmt.Fprintf(g.stdout, "Webhook %s (%s) has a new signing secret, shown only this once:\n\n  %s\n\n%s\n", w.Name, w.ID, secret.Reveal(), previous)
			return err
		},
	}
	cmd.Flags().Var(newDuration(&overlap, registry.DefaultWebhookSecretOverlap), "overlap", "how long the previous secret signs beside the new one (0s: not at all)")
	return cmd
}

func newWebhookTestCmd(g *globals) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "test NAME [--wait]",
		Short: "Send a webhook.test delivery to one webhook, and with --wait say how it went",
		Long: `Queue a webhook.test delivery to this webhook only, whatever it subscribes
to. It goes through the outbox like any delivery: tether serve sends it within
a second or so, signed as every delivery is, and retries it if it fails.

With --wait, wait for its first attempt and say how it went: exit 0 when the
receiver answered 2xx, 1 when it did not, 4 when no attempt was made within
--timeout (is tether serve running?; the delivery stays queued).`,
		Example: `  tether webhook test billing --wait`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := adminContext(cmd.Context())
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			d, err := api.SendTestWebhook(ctx, args[0])
			if err != nil {
				return err
			}
			g.mutated = true
			if !wait {
				if g.output == "json" {
					return printJSON(g.stdout, d)
				}
				_, err = fmt.Fprintf(g.stdout, "Queued test delivery %s to webhook %s; tether serve sends it within a second or so.\nSee how it went: tether webhook deliveries %s\n", d.DeliveryID(), args[0], args[0])
				return err
			}
			d, err = waitForAttempt(ctx, api, d, timeout)
			if err != nil {
				return err
			}
			if g.output == "json" {
				if err := printJSON(g.stdout, d); err != nil {
					return err
				}
			}
			return attemptOutcome(g, d, args[0])
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the first attempt and say how it went")
	cmd.Flags().Var(newDuration(&timeout, 30*time.Second), "timeout", "with --wait, how long to wait for the attempt")
	return cmd
}

// waitForAttempt reads the delivery until an attempt was recorded. tether
// serve makes it (locally too: this command only queues it), so this polls
// the database or the admin API, a few times a second.
func waitForAttempt(ctx context.Context, api admin.Service, d *registry.WebhookDelivery, timeout time.Duration) (*registry.WebhookDelivery, error) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !attempted(d) {
		if time.Now().After(deadline) {
			return nil, &exitCodeError{code: exitWaitTimeout, msg: sentence(fmt.Sprintf(
				"no attempt to send %s within %s: is tether serve running? It sends webhooks; the delivery stays queued (tether webhook deliveries shows it)",
				d.DeliveryID(), timeout))}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		next, _, err := api.GetWebhookDelivery(ctx, d.DeliveryID())
		if err != nil {
			return nil, err
		}
		d = next
	}
	return d, nil
}

// attempted: an attempt ended, delivered or not (a claim alone counts the
// attempt before it is made).
func attempted(d *registry.WebhookDelivery) bool {
	return d.State != registry.DeliveryPending || d.LastStatus != 0 || d.LastError != ""
}

// attemptOutcome prints how the attempt went (table output) and fails the
// command when the receiver did not take it.
func attemptOutcome(g *globals, d *registry.WebhookDelivery, hook string) error {
	if d.State == registry.DeliveryDelivered {
		if g.output != "json" {
			_, err := fmt.Fprintf(g.stdout, "Test delivery %s to webhook %s was delivered: the receiver answered %d.\n", d.DeliveryID(), hook, d.LastStatus)
			return err
		}
		return nil
	}
	why := display.Safe(oneLine(d.LastError, 200))
	if why == "" {
		why = fmt.Sprintf("the receiver answered %d", d.LastStatus)
	}
	return &exitCodeError{code: exitError, msg: sentence(fmt.Sprintf("test delivery %s to webhook %s failed: %s; it is retried with backoff (tether webhook deliveries %s)", d.DeliveryID(), hook, why, hook))}
}

func newWebhookRedeliverCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "redeliver DELIVERY_ID",
		Short: "Send a delivery that was delivered or failed again, with the same webhook-id",
		Long: `Send a delivery again: a new delivery (its own id, attempts and 24 hours of
retries) of the same message, the same event and data, with the same
webhook-id (and X-Tether-Delivery and body id) as the delivery that first sent
it. An admin redelivers because the receiver lost or refused the message; a
receiver that did process it is right to ignore it again, as for any retry.
Take the id from tether webhook deliveries NAME. A delivery still pending is
being sent already and is refused.`,
		Example: `  tether webhook deliveries billing
  tether webhook redeliver wd-8812`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := adminContext(cmd.Context())
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			d, err := api.RedeliverWebhook(ctx, args[0])
			if err != nil {
				return err
			}
			g.mutated = true
			if g.output == "json" {
				return printJSON(g.stdout, d)
			}
			_, err = fmt.Fprintf(g.stdout, "Delivery %s sends message %s (%s) again, with webhook-id %s; tether serve sends it within a second or so.\n",
				d.DeliveryID(), d.MessageID(), d.Event, d.MessageID())
			return err
		},
	}
}
