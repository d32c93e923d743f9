package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
)

func init() { register(newWebhookCmd) }

func newWebhookCmd(g *globals) *cobra.Command {
	return groupCommand("webhook", "Send job outcomes and fleet changes to other systems as signed HTTP callbacks",
		newWebhookCreateCmd(g), newWebhookListCmd(g), newWebhookEditCmd(g), newWebhookRotateSecretCmd(g), newWebhookTestCmd(g),
		newWebhookDeliveriesCmd(g), newWebhookRedeliverCmd(g), newWebhookDeleteCmd(g))
}

func newWebhookCreateCmd(g *globals) *cobra.Command {
	var name, url, org string
	var events, allow []string
	cmd := &cobra.Command{
		Use:   "create --name NAME --url URL --events job.finished[,...] [--org ORG]",
		Short: "Subscribe a URL to changes (its signing secret is shown once)",
		Long: `Subscribe a URL to changes. Each change is POSTed as JSON, signed as
Standard Webhooks (standardwebhooks.com) sign, so that its libraries verify
it in any language: webhook-id (the same on every retry, for
de-duplication), webhook-timestamp, and webhook-signature: v1,<base64
HMAC-SHA256>, keyed with the secret whsec_... shown once here. The former
X-Tether-Signature (t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>),
X-Tether-Delivery and X-Tether-Event are sent too, for one release more.

Deliveries are written in the same transaction as the change, retried with
exponential backoff and jitter for 24 hours, at least once, and survive
restarts. 'tether serve' sends them.

Webhooks are not sent to loopback, link-local, private, shared, unique-local
or unspecified addresses (localhost, 10.0.0.0/8, 169.254.169.254, ...) unless
tether serve --webhook-allow-cidr allows the range; on a local database, this
command checks the URL against its own --webhook-allow-cidr.

Event types: ` + strings.Join(registry.WebhookEvents, ", ") + `.`,
		Example: `  tether webhook create --name billing --url https://billing.example.com/tether --events job.finished --org payments
  tether webhook create --name pager --url https://alerts.example.com/hook --events credential.revoked,rollout.halted`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" || url == "" || len(events) == 0 {
				return usagef("webhook create needs --name NAME, --url URL and --events TYPE[,TYPE]")
			}
			allowed, err := registry.ParseWebhookAllow(allow)
			if err != nil {
				return usagef("--%s: %v", webhookAllowFlag, err)
			}
			if typed(cmd.Flags(), webhookAllowFlag) {
				if server, _, err := remoteTarget(cmd, g); err == nil && server != "" {
					return usagef("--%s applies to a local database; over the admin API of %s, that server's own --%s decides", webhookAllowFlag, server, webhookAllowFlag)
				}
			}
			ctx := cmd.Context()
			api, done, err := openAPIWith(cmd, g, registry.Config{WebhookAllow: allowed})
			if err != nil {
				return err
			}
			defer done()
			w, secret, err := api.CreateWebhook(adminContext(ctx), name, url, events, org)
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
			_, err = fmt.Fprintf(g.stdout, `Webhook %s (%s) sends %s to %s.
Its signing secret is shown only this once:

  %s

Verify each delivery with a Standard Webhooks library (webhook-signature);
docs/webhooks.md shows how in Go, Python and JavaScript.
`, w.Name, w.ID, strings.Join(w.Events, ", "), w.URL, secret.Reveal())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the subscription's name")
	f.StringVar(&url, "url", "", "where to POST (http:// or https://)")
	f.StringSliceVar(&events, "events", nil, "event types (comma-separated): "+strings.Join(registry.WebhookEvents, ", "))
	f.StringVar(&org, "org", "", "only changes of this organization's clusters")
	f.StringSliceVar(&allow, webhookAllowFlag, nil, webhookAllowUsage+"; checked here on a local database, and by tether serve, which sends, on every connection")
	return cmd
}

// webhookAllowFlag is the flag of serve (which sends webhooks) and of
// webhook create on a local database (which checks the URL): one
// $TETHER_WEBHOOK_ALLOW_CIDR sets both.
const (
	webhookAllowFlag  = "webhook-allow-cidr"
	webhookAllowUsage = "internal range (CIDR prefix or address) webhooks may be sent to, e.g. 10.20.0.0/16 for a receiver on premises; loopback, link-local, private, shared, unique-local and unspecified addresses are refused otherwise (repeat, or separate with commas, for more)"
)

func newWebhookListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List webhook subscriptions",
		Example: "  tether webhook list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			hooks, err := api.ListWebhooks(adminContext(ctx))
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, hooks)
			}
			now := api.Now()
			t := newTable(g.stdout, "NAME", "ID", "URL", "EVENTS", "ORG", "CREATED")
			for _, w := range hooks {
				t.row(w.Name, w.ID, w.URL, strings.Join(w.Events, ","), orDash(w.Org), ago(now, w.CreatedAt))
			}
			return t.flush()
		},
	}
}

func newWebhookDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME",
		Short:   "Delete a subscription and its pending deliveries",
		Example: "  tether webhook delete billing",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			w, err := api.DeleteWebhook(adminContext(ctx), args[0])
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, w)
			}
			fmt.Fprintf(g.stdout, "Deleted webhook %s (%s) and its pending deliveries.\n", w.Name, w.ID)
			return nil
		},
	}
}

func newWebhookDeliveriesCmd(g *globals) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "deliveries NAME",
		Short: "Show a subscription's recent deliveries: attempts, last answer, next retry",
		Long: `Show a subscription's recent deliveries, newest first: each one's id (what
tether webhook redeliver takes), the webhook-id receivers see (a redelivery's
is the id of the delivery that first sent the message), its state, attempts,
the receiver's last answer and when the next attempt is due.`,
		Example: "  tether webhook deliveries billing --limit 20",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			api, done, err := openAPI(cmd, g)
			if err != nil {
				return err
			}
			defer done()
			_, ds, err := api.WebhookDeliveries(adminContext(ctx), args[0], limit)
			if err != nil {
				return err
			}
			if g.output == "json" {
				return printJSON(g.stdout, ds)
			}
			now := api.Now()
			t := newTable(g.stdout, "DELIVERY", "WEBHOOK-ID", "EVENT", "SUBJECT", "STATE", "ATTEMPTS", "LAST STATUS", "NEXT ATTEMPT", "CREATED", "LAST ERROR")
			for _, d := range ds {
				next, status := "-", "-"
				if d.State == registry.DeliveryPending {
					next = until(now, d.NextAt)
				}
				if d.LastStatus != 0 {
					status = strconv.Itoa(d.LastStatus)
				}
				t.row(d.DeliveryID(), d.MessageID(), d.Event, d.SubjectID, string(d.State), strconv.Itoa(d.Attempts), status, next, ago(now, d.CreatedAt),
					orDash(display.Safe(oneLine(d.LastError, 80))))
			}
			return t.flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "how many, newest first")
	return cmd
}
