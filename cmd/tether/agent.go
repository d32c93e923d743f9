package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/agent"
	"github.com/tetherhq/tether/apiclient"
)

func init() { register(newAgentCmd) }

func newAgentCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run tether's reference agent: register a cluster, then pull and run its jobs",
	}
	cmd.AddCommand(newAgentRegisterCmd(g), newAgentRunCmd(g))
	return cmd
}

func newAgentRegisterCmd(g *globals) *cobra.Command {
	var server, token, stateDir string
	var caps []string
	var keepExisting bool
	var tlsFiles agent.TLSFiles
	var certMode string
	cmd := &cobra.Command{
		Use:   "register --server URL --token TOKEN --state-dir DIR",
		Short: "Redeem a one-time registration token and store the credential",
		Long: `Redeems a one-time registration token (from 'tether cluster create' or
'tether token issue') and stores the credential tether issues in DIR/credential.json,
mode 0600. The credential is never printed.

The token may also come from $TETHER_REGISTRATION_TOKEN, or from standard input
with --token - (so that it does not appear in the process list).

When tether has a CA (tether ca init), the agent also asks it for a client
certificate: it makes a key, sends a CSR, and keeps the certificate and key in
DIR (client.crt, client.key, mode 0600); 'tether agent run' presents it by
itself and renews it at every credential rotation. --client-cert and
--client-key use a certificate from your own PKI instead.`,
		Args: cobra.NoArgs,
		Example: `  tether agent register --server https://tether.example:7070 --token - --state-dir /var/lib/tether-agent < token.txt
  TETHER_REGISTRATION_TOKEN=... tether agent register --server http://127.0.0.1:7070 --state-dir ~/.local/state/tether-agent --keep-existing`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := missingFlags(
				missingFlag{server == "", "--server", "tether's URL, such as http://127.0.0.1:7070"},
				missingFlag{stateDir == "", "--state-dir", "the directory to keep the credential in"},
			); err != nil {
				return err
			}
			if keepExisting {
				if st, err := agent.LoadState(stateDir); err == nil {
					if g.output == "json" {
						return printJSON(g.stdout, map[string]string{"clusterId": st.Credential.ClusterID, "stateDir": stateDir})
					}
					fmt.Fprintf(g.stdout, "Already registered as cluster %s (%s); the token was not used.\n", st.Credential.ClusterID, stateDir+"/credential.json")
					return nil
				}
			}
			switch {
			case token == "-":
				if f, ok := g.stdin.(*os.File); ok && term.IsTerminal(f.Fd()) {
					fmt.Fprint(g.stderr, "Paste the registration token and press Enter: ")
				}
				line, err := bufio.NewReader(g.stdin).ReadString('\n')
				if err != nil && line == "" {
					return usagef("--token - expects the token on standard input")
				}
				token = strings.TrimSpace(line)
			case token == "":
				token = os.Getenv("TETHER_REGISTRATION_TOKEN")
			}
			if token == "" {
				return usagef("a registration token is required: --token TOKEN, --token - (stdin) or $TETHER_REGISTRATION_TOKEN")
			}
			negotiate, err := agentCapabilities(caps)
			if err != nil {
				return err
			}
			mode := agent.CertRequest(certMode)
			if mode != agent.CertAuto && mode != agent.CertAlways && mode != agent.CertNever {
				return usagef("--request-client-cert %q is not one of auto, always, never", certMode)
			}
			if (tlsFiles.ClientCert == "") != (tlsFiles.ClientKey == "") {
				return usagef("--client-cert and --client-key go together")
			}
			clusterID, err := agent.RegisterWith(cmd.Context(), server, token, stateDir, agent.RegisterOptions{
				Capabilities: negotiate, Retry: apiclient.RetryPolicy{MaxAttempts: 3}, TLS: tlsFiles, ClientCert: mode,
				Logger: slog.New(slog.NewTextHandler(g.stderr, nil)),
			})
			var netErr *url.Error // the HTTP client's: tether was not reached
			if errors.As(err, &netErr) && cmd.Context().Err() == nil {
				return failf("cannot reach tether at %s (%v): check --server, and that tether serve is running there", server, netErr.Err)
			}
			if err != nil {
				return agentError(err)
			}
			if g.output == "json" {
				return printJSON(g.stdout, map[string]string{"clusterId": clusterID, "stateDir": stateDir})
			}
			fmt.Fprintf(g.stdout, "Registered cluster %s; the credential is in %s and the payload encryption key in %s (mode 0600).\nNext: tether agent run --state-dir %s --exec 'COMMAND'\n",
				clusterID, stateDir+"/credential.json", stateDir+"/encryption-key.json", stateDir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&server, "server", "", "tether's address, e.g. http://127.0.0.1:7070")
	f.StringVar(&token, "token", "", "one-time registration token (- reads it from stdin)")
	// Its variable is $TETHER_REGISTRATION_TOKEN (read above), not the
	// generic $TETHER_TOKEN.
	_ = f.SetAnnotation("token", ownEnvAnnotation, []string{"true"})
	f.StringVar(&stateDir, "state-dir", "", "directory for the credential (created with mode 0700)")
	f.StringSliceVar(&caps, "capabilities", agent.DefaultCapabilities, "capabilities to negotiate: hmac (signed writes), lease (leases, so that tether reclaims the job of an agent that died); none for neither")
	f.StringVar(&tlsFiles.CAFile, "ca-file", "", "PEM bundle tether's server certificate must chain to (default: the system's roots)")
	f.StringVar(&tlsFiles.ClientCert, "client-cert", "", "client certificate (PEM) from your own PKI; then tether is not asked for one")
	f.StringVar(&tlsFiles.ClientKey, "client-key", "", "the key (PEM) of --client-cert")
	f.StringVar(&certMode, "request-client-cert", "auto", "ask tether's CA for a client certificate (kept in --state-dir): auto (if tether has a CA), always (fail without one), never")
	f.BoolVar(&keepExisting, "keep-existing", false, "when --state-dir already holds a credential, keep it and exit 0 without using the token (for a start script that runs every time)")
	return cmd
}

func newAgentRunCmd(g *globals) *cobra.Command {
	var cfg agent.Config
	var logFormat string
	cmd := &cobra.Command{
		Use:   "run --state-dir DIR --exec COMMAND",
		Short: "Pull jobs and run COMMAND for each, until interrupted",
		Long: `Long-polls tether for the cluster's jobs and runs COMMAND (with /bin/sh -c)
for each: the job as JSON on stdin; TETHER_JOB_ID, TETHER_JOB_KIND,
TETHER_JOB_ATTEMPT, TETHER_JOB_IDEMPOTENCY_KEY and TETHER_CLUSTER_ID in the
environment.

Lines COMMAND prints to stdout:
  ::status PHASE [MESSAGE]   posts an interim status
  ::result {JSON}            the result: {"outcome": "succeeded|failed|noop|conflict", "error": "...", ...}
  ::event {JSON}             an event for tether (kind, resourceRef, conditions)
Without ::result, exit status 0 means succeeded, anything else failed.

On SIGTERM the agent stops polling, lets running jobs finish (--drain), stops
the rest, and exits.

Over HTTPS it presents the client certificate tether's CA issued at
registration (or --client-cert), read again whenever the files change: a
certificate renewed by rotation or by your own tooling is used from the next
connection on, without a restart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := missingFlags(
				missingFlag{cfg.StateDir == "", "--state-dir", "the directory tether agent register wrote the credential to"},
				missingFlag{cfg.Command == "", "--exec", "the command to run for each job, such as ./apply.sh"},
			); err != nil {
				return err
			}
			if cfg.Concurrency < 1 {
				return usagef("--concurrency must be at least 1")
			}
			var h slog.Handler = slog.NewTextHandler(g.stderr, nil)
			switch logFormat {
			case "text":
			case "json":
				h = slog.NewJSONHandler(g.stderr, nil)
			default:
				return usagef("--log-format %q is not one of text, json", logFormat)
			}
			if (cfg.TLS.ClientCert == "") != (cfg.TLS.ClientKey == "") {
				return usagef("--client-cert and --client-key go together")
			}
			cfg.Logger = slog.New(h)
			cfg.Version = versionString()
			a, err := agent.New(cfg)
			if err != nil {
				return failf("%v", err)
			}
			return agentError(a.Run(cmd.Context()))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.StateDir, "state-dir", "", "directory holding the credential from 'tether agent register'")
	f.StringVar(&cfg.Command, "exec", "", "command to run for each job (with /bin/sh -c)")
	f.IntVar(&cfg.Concurrency, "concurrency", 1, "jobs to run at once")
	f.DurationVar(&cfg.DrainTimeout, "drain", agent.DefaultDrainTimeout, "on SIGTERM, how long running jobs may finish")
	f.DurationVar(&cfg.KillGrace, "kill-grace", agent.DefaultKillGrace, "how long a stopped command gets between SIGTERM and SIGKILL")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&cfg.TLS.CAFile, "ca-file", "", "PEM bundle tether's server certificate must chain to (default: the system's roots)")
	f.StringVar(&cfg.TLS.ClientCert, "client-cert", "", "client certificate (PEM) for mTLS, reloaded when the file changes (default: the one tether's CA issued, in --state-dir)")
	f.StringVar(&cfg.TLS.ClientKey, "client-key", "", "the key (PEM) of --client-cert")
	return cmd
}

// agentCapabilities checks --capabilities: hmac and lease, or none alone
// (an empty, non-nil list: agent.RegisterWith takes nil for its defaults).
func agentCapabilities(caps []string) ([]string, error) {
	out := []string{}
	for _, c := range caps {
		switch c {
		case apiclient.CapabilityHMAC, apiclient.CapabilityLease:
			out = append(out, c)
		case "none":
			if len(caps) > 1 {
				return nil, usagef("--capabilities none stands alone: it negotiates no capability")
			}
		default:
			return nil, usagef("capability %q is not one of hmac, lease (or none)", c)
		}
	}
	return out, nil
}

// agentError turns the client's refusals into sentences that say what to do.
func agentError(err error) error {
	var apiErr *apiclient.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, apiclient.ErrUnauthenticated):
		return failf("tether refused this agent's credential (revoked or expired): issue a new token (tether token issue CLUSTER) and register again")
	case apiclient.IsCode(err, apiclient.CodeRegistrationInvalid):
		return failf("the registration token is invalid, expired, revoked or already used: ask an admin for a new one (tether token issue CLUSTER)")
	case apiclient.IsCode(err, apiclient.CodeClusterDisabled):
		return failf("the cluster is disabled in tether: an admin must enable it (tether cluster enable CLUSTER)")
	case errors.As(err, &apiErr):
		return failf("%s (request %s)", strings.TrimSuffix(apiErr.Message, "."), apiErr.RequestID)
	}
	return failf("%v", err)
}

// missingFlag is a required flag of the agent's commands: missing when
// unset, what describes what it takes.
type missingFlag struct {
	unset bool
	name  string
	what  string
}

// missingFlags names each required flag left out and what it takes, so that
// a newcomer who typed one of two learns which one is missing.
func missingFlags(flags ...missingFlag) error {
	var missing []string
	for _, f := range flags {
		if f.unset {
			missing = append(missing, f.name+" ("+f.what+")")
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return usagef("%s is required", missing[0])
	}
	return usagef("%s are required", strings.Join(missing, " and "))
}
