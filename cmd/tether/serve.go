package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tetherhq/tether/internal/tracing"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/maintenance"
	"github.com/tetherhq/tether/server"
)

func init() { register(newServeCmd) }

const defaultListen = "127.0.0.1:7070"

// serveOptions configures startAgentAPI. The zero value serves on
// defaultListen over plain HTTP with default rate limits, logging text to
// stderr.
type serveOptions struct {
	listen      string // host:port; port 0 picks a free one
	tlsCert     string // PEM certificate (chain) and key: serve HTTPS
	tlsKey      string
	tlsClientCA string // PEM CA bundle: verify client certificates when given (mTLS)
	// logger, when set, receives the server's logs (an embedding console
	// passes its own); otherwise logs go to logOutput (default stderr) in
	// logFormat ("text" or "json") at logLevel ("info" unless set).
	logger *slog.Logger
	// reloadOnHangup: SIGHUP reloads certificates and the key file, as a
	// daemon's does. Only serve asks for it: to the console, SIGHUP means
	// its terminal is gone, and it must quit (with the agent API it serves).
	reloadOnHangup bool
	logOutput      io.Writer
	logFormat      string
	logLevel       string
	// rate is each cluster's sustained requests per second (0: the server's
	// default; negative: no limit); burst its bucket size (0: default).
	rate  float64
	burst int
	// trustedProxies are --trusted-proxies: whose X-Forwarded-For to believe.
	trustedProxies []string
	// webhookAllow are --webhook-allow-cidr: internal ranges webhooks may
	// go to. They reach the registry through openApp's configuration.
	webhookAllow []string
	// shutdownDelay keeps answering (with /readyz failing) this long after
	// the signal, before draining.
	shutdownDelay time.Duration
	// bodyTimeout bounds how long a client may take to send a body.
	bodyTimeout time.Duration
	// pollsPerCredential and pollsPerAddress cap the long-polls held at once
	// (0: the server's default; negative: no cap).
	pollsPerCredential, pollsPerAddress int
	// connsPerAddress caps the connections one address may have open.
	connsPerAddress int
	// visibility is the registry's visibility window (negative: off).
	visibility time.Duration
	// idempotency is how long a job's idempotency key answers it
	// (registry.Config.IdempotencyRetention: negative, while it is open).
	idempotency time.Duration
	// retention of finished jobs (overall and per state) and of the audit
	// trail; zero keeps forever.
	retainJobs, retainAudit, retainDeliveries time.Duration
	retainByState                             []string
	// diagListen, when set, serves /metrics and pprof on an address of its
	// own.
	diagListen string
	// caRefresh is how often the client CAs are looked at again (0:
	// clientCARefresh).
	caRefresh time.Duration
	// noClusterLatencyLabel is --metrics-per-cluster=false (the zero value
	// keeps the label, as the console's embedded server wants).
	noClusterLatencyLabel bool
	// otlpEndpoint is --otlp-endpoint: trace to this OTLP/HTTP collector
	// (tracing is also on when $OTEL_EXPORTER_OTLP_ENDPOINT is set).
	otlpEndpoint string
	// ssh is the console over SSH (--ssh-listen; serve_ssh.go).
	ssh sshOptions
}

func newServeCmd(g *globals) *cobra.Command {
	var opts serveOptions
	var rate float64
	perCluster := true
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the agent API: agents register, long-poll for jobs and report over HTTP",
		Long: `Serve the agent API (the pull-mode protocol, /api/agent) over HTTP, with
/healthz, /readyz and Prometheus /metrics, on the --db database. The reaper
(expired leases and jobs), the pruner (old events) and the other background
services run inside it; one that fails is logged and restarted with backoff
(tether_service_up and tether_service_failures_total report each).

/metrics names every organization's clusters, so on --listen, which agents of
every organization reach, it takes an admin token that no organization
confines (tether admin-token create --name prometheus --role viewer) as
Authorization: Bearer. --diag-listen serves it without a token, with the
profiler, on an address that only the monitoring network should reach.

SIGINT or SIGTERM shuts it down gracefully: after --shutdown-delay (during
which it answers as usual but /readyz fails, so that a load balancer takes it
out), it stops accepting, answers held long-polls with an empty job list,
finishes in-flight requests, stops the background services, and closes the
database.

Behind a load balancer or reverse proxy, --trusted-proxies names the proxies
whose X-Forwarded-For header is believed: per-address limits and logs then
use the client's address rather than the proxy's. Nobody else's header is.

With --tls-cert and --tls-key, a renewed certificate is picked up without a
restart: within seconds of the files changing, or at once on SIGHUP. A
certificate that does not load is logged and the previous one kept. Client
certificates are verified against --tls-client-ca and tether's own CA
(tether ca init), both looked at again every 10 seconds and on SIGHUP.

Webhooks are sent from here, never to loopback, link-local, private, shared,
unique-local or unspecified addresses (checked on every connection, after the
name is resolved) unless --webhook-allow-cidr names the range: a receiver on
your own network.

` + precedenceHelp,
		Example: `  tether serve
  tether serve --listen 0.0.0.0:7070 --tls-cert server.pem --tls-key server-key.pem
  tether serve --log-format json --rate 100 --burst 500
  tether serve --config /etc/tether/serve.yaml
  TETHER_DB=postgres://tether@db/tether tether serve --trusted-proxies 10.0.0.0/8 --shutdown-delay 10s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (opts.tlsCert == "") != (opts.tlsKey == "") {
				return usagef("--tls-cert and --tls-key go together")
			}
			if opts.tlsClientCA != "" && opts.tlsCert == "" {
				return usagef("--tls-client-ca needs --tls-cert and --tls-key")
			}
			if opts.logFormat != "text" && opts.logFormat != "json" {
				return usagef("--log-format %q is not one of text, json", opts.logFormat)
			}
			if _, err := parseLogLevel(opts.logLevel); err != nil {
				return usagef("%v", err)
			}
			if _, err := server.ParseTrustedProxies(opts.trustedProxies); err != nil {
				return usagef("--trusted-proxies: %v", err)
			}
			if _, err := retentionConfig(opts); err != nil {
				return err
			}
			if err := tracing.CheckEndpoint(opts.otlpEndpoint); err != nil {
				return usagef("--otlp-endpoint: %v", err)
			}
			if err := opts.ssh.check(); err != nil {
				return err
			}
			opts.noClusterLatencyLabel = !perCluster
			allow, err := registry.ParseWebhookAllow(opts.webhookAllow)
			if err != nil {
				return usagef("--webhook-allow-cidr: %v", err)
			}
			if rate < 0 || opts.burst < 0 {
				return usagef("--rate and --burst must not be negative")
			}
			opts.rate = rate
			if rate == 0 {
				opts.rate = -1 // the flag's 0 means "no limit"; serveOptions' 0 means "default"
			}
			for _, n := range []*int{&opts.pollsPerCredential, &opts.pollsPerAddress, &opts.connsPerAddress} {
				switch {
				case *n < 0:
					return usagef("--max-polls-per-credential, --max-polls-per-address and --max-conns-per-address must not be negative (0: no cap)")
				case *n == 0:
					*n = -1 // as for --rate: the flag's 0 is "no cap"
				}
			}
			if opts.visibility == 0 {
				// A window of 0 hides nothing; the registry's 0 means
				// "the default" (30 s).
				opts.visibility = -1
			}
			if opts.idempotency == 0 {
				opts.idempotency = -1 // as for the window: 0 keeps keys for open jobs only
			}
			if isPostgresURL(g.db) && g.keyFile == "" {
				return usagef("serve on PostgreSQL needs --key-file (or $TETHER_KEY_FILE): every replica must seal and open secrets with the same key. Create one with: tether keys init --key-file FILE, and give each replica a copy")
			}
			opts.logOutput = g.stderr
			ctx := cmd.Context()
			a, err := openApp(ctx, g, registry.Config{VisibilityWindow: opts.visibility, WebhookAllow: allow, IdempotencyRetention: opts.idempotency})
			if err != nil {
				return err
			}
			defer a.Close()
			// A key file that cannot be used (missing while secrets sealed
			// with it exist, unreadable, malformed, or another one that
			// opens none of them) stops serve now rather than fail every
			// agent that signs.
			if _, err := a.reg.Config().Keyring.Seal([]byte("probe"), []byte("serve")); err != nil {
				return err
			}
			if err := a.reg.CheckKeyFileOpensStore(ctx); err != nil {
				return err
			}
			opts.reloadOnHangup = true
			_, wait, err := startAgentAPI(ctx, a, opts)
			if err != nil {
				return err
			}
			if err := wait(); err != nil {
				// Say what failed (a listener error, a shutdown cut short)
				// rather than run()'s "internal error" for uncoded errors.
				return registry.Errorf(registry.CodeUnavailable, "%v", err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.listen, "listen", defaultListen, "address to listen on (host:port; port 0 picks a free port)")
	f.StringVar(&opts.tlsCert, "tls-cert", "", "PEM certificate file: serve HTTPS (with --tls-key)")
	f.StringVar(&opts.tlsKey, "tls-key", "", "PEM private key file of --tls-cert")
	f.StringVar(&opts.tlsClientCA, "tls-client-ca", "", "PEM CA file: verify agents' client certificates (mTLS; a certificate naming the cluster replaces HMAC signing)")
	f.StringVar(&opts.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&opts.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.Float64Var(&rate, "rate", server.DefaultRateLimit, "requests per second each cluster's agent may make, sustained (0: no limit)")
	f.IntVar(&opts.burst, "burst", server.DefaultRateBurst, "requests each cluster's agent may make at once")
	f.StringSliceVar(&opts.trustedProxies, "trusted-proxies", nil, "CIDR prefixes or addresses of load balancers whose X-Forwarded-For is believed, comma-separated (e.g. 10.0.0.0/8)")
	f.StringSliceVar(&opts.webhookAllow, webhookAllowFlag, nil, webhookAllowUsage)
	f.Var(newDuration(&opts.retainJobs, registry.DefaultJobRetention), "retain-jobs", "delete finished jobs (and their history) this long after they finished; 0 keeps them forever")
	f.StringArrayVar(&opts.retainByState, "retain-jobs-state", nil, "STATE=DURATION: keep finished jobs in this state for another time, e.g. failed=90d (repeat, or separate with commas, for more)")
	f.Var(newDuration(&opts.retainAudit, registry.DefaultAuditRetention), "retain-audit", "delete audit entries this long after they were written; 0 keeps them forever")
	f.Var(newDuration(&opts.retainDeliveries, registry.DefaultWebhookDeliveryRetention), "retain-webhook-deliveries", "delete webhook deliveries this long after they were delivered or failed for good (pending ones stay); 0 keeps them forever")
	f.Var(newDuration(&opts.idempotency, registry.DefaultIdempotencyRetention), "idempotency-retention", "a job's idempotency key answers it this long from its submission, whatever its state, so that a producer's retry never queues it twice (expired keys are deleted); 0 keeps a key only while its job is open")
	f.DurationVar(&opts.visibility, "visibility-window", registry.DefaultVisibilityWindow, "hide a job handed to one poll from the other polls of its cluster this long unless acked (0: every poll sees every queued job)")
	f.DurationVar(&opts.bodyTimeout, "body-timeout", server.DefaultBodyTimeout, "answer 408 and close the connection when a request's body has not arrived this long after its headers")
	f.IntVar(&opts.pollsPerCredential, "max-polls-per-credential", server.DefaultMaxPollsPerCredential, "long-polls one agent credential may hold at once; more are answered 429 too_many_polls (0: no cap)")
	f.IntVar(&opts.pollsPerAddress, "max-polls-per-address", server.DefaultMaxPollsPerAddress, "long-polls one client address may hold at once, all credentials together; raise it for a fleet behind one NAT (0: no cap)")
	f.IntVar(&opts.connsPerAddress, "max-conns-per-address", server.DefaultMaxConnsPerAddress, "connections one client address (not a --trusted-proxies one) may have open at once, idle ones included; at the cap its longest-idle connection gives way to a new one, or if none is idle the new one is answered 429 too_many_connections and closed (0: no cap)")
	f.DurationVar(&opts.shutdownDelay, "shutdown-delay", 0, "on SIGTERM, keep answering this long with /readyz failing before draining (e.g. 10s behind a load balancer)")
	f.StringVar(&opts.diagListen, "diag-listen", "", "also serve /metrics (without a token) and /debug/pprof on this address (host:port), apart from the agent API; keep it off the agents' network")
	f.BoolVar(&perCluster, "metrics-per-cluster", true, "label the job wait and run time histograms by cluster (32 series a cluster); false: one of each for the fleet")
	f.StringVar(&opts.otlpEndpoint, "otlp-endpoint", "", "send OpenTelemetry traces to this OTLP/HTTP collector, e.g. http://otel-collector:4318 (default: off, unless $OTEL_EXPORTER_OTLP_ENDPOINT or $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set)")
	addSSHFlags(f, &opts.ssh)
	f.String(configFlag, "", "YAML file of settings: its keys are these flags' names (see above for precedence)")
	// Other names of two flags: --retain-finished-jobs says what is deleted,
	// and --client-ca is the name the agent protocol's own notes use.
	aliases := map[string]string{"retain-finished-jobs": "retain-jobs", "client-ca": "tls-client-ca"}
	f.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if to, ok := aliases[name]; ok {
			name = to
		}
		return pflag.NormalizedName(name)
	})
	return cmd
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("--log-level %q is not one of debug, info, warn, error", s)
	}
	return l, nil
}

// startAgentAPI listens, then serves the agent API over a's registry, with
// the background services (serveServices) beside it, until ctx ends. It
// returns the bound address at once; wait blocks until the server has shut
// down gracefully and then the services have stopped, and returns the
// server's error (nil after a clean shutdown). Closing a stays with the
// caller, after wait: drain, stop the services, close the store, in that
// order.
func startAgentAPI(ctx context.Context, a *app, opts serveOptions) (addr string, wait func() error, err error) {
	log := opts.logger
	if log == nil {
		out := opts.logOutput
		if out == nil {
			out = os.Stderr
		}
		level, err := parseLogLevel(opts.logLevel)
		if err != nil {
			return "", nil, err
		}
		if log, err = server.NewLogger(out, opts.logFormat, level); err != nil {
			return "", nil, err
		}
	}
	retention, err := retentionConfig(opts)
	if err != nil {
		return "", nil, err
	}
	listen := opts.listen
	if listen == "" {
		listen = defaultListen
	}
	trusted, err := server.ParseTrustedProxies(opts.trustedProxies)
	if err != nil {
		return "", nil, usagef("--trusted-proxies: %v", err)
	}
	var tlsConfig *tls.Config
	var certs *certReloader
	var cas *clientCAs
	if opts.tlsCert != "" || opts.tlsKey != "" {
		if tlsConfig, certs, err = serverTLS(opts, log); err != nil {
			return "", nil, err
		}
		// Client certificates are verified against --tls-client-ca and
		// tether's own CA (tether ca init), both reloaded while serving.
		if cas, err = newClientCAs(ctx, opts.tlsClientCA, a.reg, tlsConfig, log); err != nil {
			return "", nil, err
		}
		tlsConfig.GetConfigForClient = cas.getConfigForClient
	}
	if tlsConfig == nil {
		if bundle, err := a.reg.CABundle(ctx); err == nil && len(bundle) > 0 {
			log.Warn("tether has a CA, but serve has no --tls-cert: agents' client certificates are only seen over HTTPS served by tether itself")
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", nil, listenError("--listen", listen, err)
	}
	scheme := "http"
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
		scheme = "https"
	}
	addr = ln.Addr().String()
	var diagLn net.Listener
	if opts.diagListen != "" {
		if diagLn, err = net.Listen("tcp", opts.diagListen); err != nil {
			ln.Close()
			return "", nil, listenError("--diag-listen", opts.diagListen, err)
		}
	}

	// The console over SSH (--ssh-listen): listening now, served beside
	// the services, drained when they stop.
	sshc, err := listenSSH(ctx, a, opts.ssh, scheme+"://"+addr, log)
	if err != nil {
		ln.Close()
		if diagLn != nil {
			diagLn.Close()
		}
		return "", nil, err
	}

	tp, err := tracing.Provider(ctx, opts.otlpEndpoint, log)
	if err != nil {
		ln.Close()
		if diagLn != nil {
			diagLn.Close()
		}
		sshc.close()
		return "", nil, usagef("--otlp-endpoint: %v", err)
	}
	cfg := server.Config{Logger: log, RateLimit: opts.rate, RateBurst: opts.burst,
		TrustedProxies: trusted, ShutdownDelay: opts.shutdownDelay, BodyTimeout: opts.bodyTimeout,
		MaxPollsPerCredential: opts.pollsPerCredential, MaxPollsPerAddress: opts.pollsPerAddress, MaxConnsPerAddress: opts.connsPerAddress,
		NoClusterLatencyLabel: opts.noClusterLatencyLabel}
	if tp != nil {
		cfg.TracerProvider = tp // not a nil *TracerProvider in the interface
	}
	// The background services run on a context of their own: they stop
	// once the agent API has drained (below), not when ctx ends, so that
	// the reaper, the webhook sender and the diagnostics listener serve to
	// the end of the drain; the caller closes the store after wait.
	services := maintenance.New(maintenance.Config{Logger: log})
	cfg.Services = services.Status
	srv := server.New(a.reg, cfg)
	services.Add(serveServices(serveEnv{a: a, srv: srv, log: log, opts: opts, retention: retention, certs: certs, cas: cas, diagLn: diagLn, ssh: sshc})...)
	if diagLn != nil {
		log.Info("diagnostics listening", "addr", diagLn.Addr().String(), "paths", "/metrics /debug/pprof/")
	}
	services.Start(context.WithoutCancel(ctx))
	// Under systemd (Type=notify): word when the shutdown begins, so that
	// it does not take the drain for a hang.
	stopNotify := context.AfterFunc(ctx, notifyStopping)
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, ln)
		if stopNotify() { // the listener failed: a shutdown too
			notifyStopping()
		}
		// Drained (or failed): the services stop now, whatever ended it.
		services.Stop()
		served <- err
	}()
	rateDesc := "off"
	if opts.rate >= 0 {
		r, b := opts.rate, opts.burst
		if r == 0 {
			r = server.DefaultRateLimit
		}
		if b == 0 {
			b = server.DefaultRateBurst
		}
		rateDesc = fmt.Sprintf("%g/s burst %d per cluster", r, b)
	}
	log.Info("tether serve listening", "version", versionString(), "addr", addr, "url", scheme+"://"+addr, "db", a.store.Path(),
		"tls", tlsConfig != nil, "mtls", cas != nil && cas.enabled(), "rate_limit", rateDesc,
		"trusted_proxies", len(trusted), "shutdown_delay", opts.shutdownDelay, "tracing", tp != nil)
	// Under systemd (Type=notify): ready now; the watchdog keep-alive is one
	// of the services.
	notifyReady(log)

	var once sync.Once
	var result error
	wait = func() error {
		once.Do(func() {
			result = <-served
			if tp != nil {
				// Send the spans still batched, within a bound: a
				// collector that is gone must not hold the shutdown.
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := tp.Shutdown(sctx); err != nil {
					log.Warn("tracing: spans still batched were not sent", "err", err)
				}
				cancel()
			}
		})
		return result
	}
	return addr, wait, nil
}

func serverTLS(opts serveOptions, log *slog.Logger) (*tls.Config, *certReloader, error) {
	if opts.tlsCert == "" || opts.tlsKey == "" {
		return nil, nil, usagef("--tls-cert and --tls-key go together")
	}
	certs, err := newCertReloader(opts.tlsCert, opts.tlsKey, log)
	if err != nil {
		return nil, nil, registry.Errorf(registry.CodeInvalid, "%v", err)
	}
	cfg := &tls.Config{
		GetCertificate: certs.getCertificate,
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
	}
	return cfg, certs, nil
}

// retentionConfig turns serve's flags into the retention service's
// configuration: zero on a flag keeps forever.
func retentionConfig(opts serveOptions) (registry.RetentionConfig, error) {
	forever := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	cfg := registry.RetentionConfig{Jobs: forever(opts.retainJobs), Audit: forever(opts.retainAudit), WebhookDeliveries: forever(opts.retainDeliveries),
		ByState: map[registry.JobState]time.Duration{}}
	var pairs []string
	for _, v := range opts.retainByState {
		// Comma-separated too, as every list flag takes it: one variable
		// ($TETHER_RETAIN_JOBS_STATE) or config string can then hold several.
		for _, kv := range strings.Split(v, ",") {
			if kv = strings.TrimSpace(kv); kv != "" {
				pairs = append(pairs, kv)
			}
		}
	}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		state := registry.JobState(strings.TrimSpace(k))
		if !ok || !state.Valid() || !state.Terminal() {
			return cfg, usagef("--retain-jobs-state %q is not STATE=DURATION with a finished state (succeeded, failed, noop, conflict, canceled, expired)", kv)
		}
		var d time.Duration
		if err := newDuration(&d, 0).Set(strings.TrimSpace(v)); err != nil {
			return cfg, usagef("--retain-jobs-state %q: %v", kv, err)
		}
		cfg.ByState[state] = forever(d)
	}
	return cfg, nil
}

// listenError says why the address of flag could not be bound and what to
// do about it: the two causes a newcomer meets (a second `make run`, a port
// below 1024) get their remedy, and an address that is not host:port is a
// usage error like any other bad flag value.
func listenError(flag, addr string, err error) error {
	env := "$TETHER_" + strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(flag, "--"), "-", "_"))
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return registry.Errorf(registry.CodeUnavailable,
			"cannot listen on %s (%s): another process is listening there, perhaps another tether serve or console --serve (make run); stop it, or choose another address with %s (or %s)",
			addr, flag, flag, env)
	case errors.Is(err, syscall.EACCES):
		return registry.Errorf(registry.CodeUnavailable,
			"cannot listen on %s (%s): permission denied; ports below 1024 need root or CAP_NET_BIND_SERVICE: choose a port of 1024 or above with %s (or %s)",
			addr, flag, flag, env)
	}
	if _, _, serr := net.SplitHostPort(addr); serr != nil {
		return usagef("%s %q is not an address to listen on (%v): give host:port, such as 127.0.0.1:7070, or :7070 for every interface", flag, addr, serr)
	}
	return registry.Errorf(registry.CodeUnavailable, "cannot listen on %s (%s): %v", addr, flag, err)
}
