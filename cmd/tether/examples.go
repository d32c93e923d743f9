package main

import "github.com/spf13/cobra"

// examples are the --help examples of commands whose own file does not set
// one. A command's file may set cobra.Command.Example itself, which wins;
// TestEveryCommandHasAnExample keeps every command covered one way or the
// other.
var examples = map[string]string{
	"tether": `  tether cluster create --name prod-eu --namespaces apps
  tether job submit --cluster prod-eu --kind apply -f deployment.json --wait
  tether serve --listen 0.0.0.0:7070
  tether console`,
	"tether cluster": `  tether cluster list
  tether cluster get prod-eu -o yaml`,
	"tether cluster get": `  tether cluster get prod-eu
  tether cluster get prod-eu -o json
  tether cluster get prod-eu --jq '.status.lastHeartbeatAt'`,
	"tether cluster delete": `  tether cluster delete old-staging
  tether cluster delete old-staging --yes`,
	"tether cluster disable": `  tether cluster disable prod-eu`,
	"tether cluster enable":  `  tether cluster enable prod-eu`,
	"tether ssh": `  tether ssh host-key
  ssh -p 2222 tether.example.com   # the console, once serve --ssh-listen :2222 runs`,
	"tether keys": `  tether --db postgres://tether@db/tether keys init --key-file /etc/tether/tether.key`,
	"tether ca": `  tether ca init
  tether ca show > tether-client-ca.pem`,
	"tether credential": `  tether credential list prod-eu
  tether credential rotate prod-eu`,
	"tether credential list":   `  tether credential list prod-eu`,
	"tether credential rotate": `  tether credential rotate prod-eu`,
	"tether credential revoke": `  tether credential revoke prod-eu`,
	"tether job": `  tether job list --state queued,in_progress
  tether job get JOB_ID`,
	"tether job list": `  tether job list
  tether job list --cluster prod-eu --state failed,conflict -o wide
  tether job list --state queued -o jsonpath='{range [*]}{.id}{"\n"}{end}'`,
	"tether job get": `  tether job get j-01hx...
  tether job get j-01hx... -o json --jq .result`,
	"tether job cancel":       `  tether job cancel j-01hx...`,
	"tether job requeue":      `  tether job requeue j-01hx...`,
	"tether job extend-lease": `  tether job extend-lease j-01hx... --by 30m`,
	"tether token": `  tether token issue prod-eu
  tether token list`,
	"tether token issue": `  tether token issue prod-eu
  tether token issue prod-eu --ttl 1h -o json --jq .token`,
	"tether token list": `  tether token list
  tether token list prod-eu`,
	"tether token revoke": `  tether token revoke rt-01hx...`,
	"tether admin-token": `  tether admin-token create --name ci --role operator
  tether admin-token list`,
	"tether rollout": `  tether rollout list
  tether rollout get upgrade-2024-05`,
	"tether webhook": `  tether webhook create --name billing --url https://billing.example.com/tether --events job.finished
  tether webhook list
  tether webhook test billing --wait
  tether webhook rotate-secret billing --overlap 24h
  tether webhook deliveries billing
  tether webhook redeliver wd-8812`,
	"tether agent": `  tether agent register --server http://127.0.0.1:7070 --token - --state-dir ~/.local/state/tether-agent < token.txt
  tether agent run --state-dir ~/.local/state/tether-agent --exec ./apply-job.sh`,
	"tether agent run": `  tether agent run --state-dir /var/lib/tether-agent --exec 'kubectl apply -f -'
  tether agent run --state-dir ~/.local/state/tether-agent --exec ./run-job.sh --concurrency 4 --log-format json`,
	"tether demo": `  tether demo
  tether demo --db demo.db`,
	"tether events": `  tether events
  tether events --cluster prod-eu --follow
  tether events -o yaml`,
}

// addExamples fills in the examples of commands that have none.
func addExamples(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.Example == "" {
			c.Example = examples[c.CommandPath()]
		}
	}
	walk(root)
}
