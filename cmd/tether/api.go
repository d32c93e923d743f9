package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// adminAPI is the registry as the admin commands use it: the registry
// itself over --db (localAPI), or remoteAPI over a tether's admin API
// (--server, or a context saved by tether login). Both answer with the
// registry's records and errors, so a command prints the same either way.
type adminAPI interface {
	Now() time.Time
	GetCluster(ctx context.Context, ref string) (*registry.Cluster, error)
	ListClusters(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error)
	CreateCluster(ctx context.Context, spec registry.ClusterSpec, tokenTTL time.Duration) (*registry.Cluster, *registry.IssuedToken, error)
	UpdateCluster(ctx context.Context, id string, version int64, spec registry.ClusterSpec) (*registry.Cluster, error)
	ModifyCluster(ctx context.Context, ref string, edit func(*registry.ClusterSpec) error) (*registry.Cluster, error)
	SetClusterEnabled(ctx context.Context, ref string, enabled bool, reason string) (*registry.Cluster, error)
	SetClusterPaused(ctx context.Context, ref string, paused bool, reason string) (*registry.Cluster, error)
	DeleteCluster(ctx context.Context, ref, reason string) (*registry.Cluster, error)
	RotateSigningKey(ctx context.Context, ref string, overlap time.Duration) (*registry.SigningKey, error)

	IssueToken(ctx context.Context, cluster string, ttl time.Duration) (*registry.IssuedToken, error)
	ListTokens(ctx context.Context, cluster string) ([]registry.RegistrationToken, error)
	RevokeToken(ctx context.Context, id, reason string) (*registry.RegistrationToken, error)
	ListCredentials(ctx context.Context, cluster string) ([]registry.Credential, error)
	// ForceRotationOutcome is ForceRotation, with how long the credentials
	// keep working unless the agent rotates (the server's setting) and the
	// warning when the agent has never rotated.
	ForceRotationOutcome(ctx context.Context, cluster, reason string) (registry.ForcedRotation, error)
	RevokeCredentials(ctx context.Context, cluster, reason string) (int, error)

	JobCounts(ctx context.Context) ([]registry.JobCount, error)
	QueueHealth(ctx context.Context, cluster string) (*registry.QueueHealth, error)
	FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error)

	SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, bool, error)
	ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error)
	ListStuckJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error)
	GetJob(ctx context.Context, id string) (*registry.Job, error)
	ShowJobPayload(ctx context.Context, id string) (*registry.Job, error)
	WaitJob(ctx context.Context, id string) (*registry.Job, error)
	JobHistory(ctx context.Context, id string) ([]registry.JobHistoryEntry, error)
	RequeueJob(ctx context.Context, id, reason string) (*registry.Job, error)
	RequeueJobWith(ctx context.Context, id string, o registry.RequeueOptions) (*registry.Job, error)
	CancelJob(ctx context.Context, id, reason string) (*registry.Job, error)
	RetryJob(ctx context.Context, id, reason string) (*registry.Job, error)
	DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error)
	ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error)

	CreateRollout(ctx context.Context, spec registry.RolloutSpec) (*registry.Rollout, error)
	ListRollouts(ctx context.Context, p registry.RolloutListParams) ([]registry.Rollout, error)
	GetRollout(ctx context.Context, ref string) (*registry.Rollout, error)
	PauseRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error)
	ResumeRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error)
	AbortRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error)
	RetryFailedRollout(ctx context.Context, ref, reason string) (*registry.Rollout, error)
	// StepRollout is what rollout create --wait does each tick: locally,
	// advance the rollout (no server need run); remotely, read it (the
	// server advances it).
	StepRollout(ctx context.Context, id string) (*registry.Rollout, error)

	CreateWebhook(ctx context.Context, name, url string, events []string, org string) (*registry.Webhook, registry.Secret, error)
	ListWebhooks(ctx context.Context) ([]registry.Webhook, error)
	DeleteWebhook(ctx context.Context, ref string) (*registry.Webhook, error)
	WebhookDeliveries(ctx context.Context, ref string, limit int) (*registry.Webhook, []registry.WebhookDelivery, error)
	GetWebhook(ctx context.Context, ref string) (*registry.Webhook, error)
	UpdateWebhook(ctx context.Context, ref string, version int64, edit registry.WebhookEdit) (*registry.Webhook, error)
	RotateWebhookSecret(ctx context.Context, ref string, overlap time.Duration) (*registry.Webhook, registry.Secret, error)
	SendTestWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error)
	// GetWebhookDelivery answers the delivery's webhook too, locally; over
	// --server, nil.
	GetWebhookDelivery(ctx context.Context, ref string) (*registry.WebhookDelivery, *registry.Webhook, error)
	RedeliverWebhook(ctx context.Context, ref string) (*registry.WebhookDelivery, error)

	CreateAdminToken(ctx context.Context, name string, role registry.Role, org string, ttl time.Duration) (*registry.IssuedAdminToken, error)
	IssueAdminToken(ctx context.Context, spec registry.AdminTokenSpec) (*registry.IssuedAdminToken, error)
	SetAdminTokenSSHKeys(ctx context.Context, ref string, keys []string) (*registry.AdminToken, error)
	ListAdminTokens(ctx context.Context) ([]registry.AdminToken, error)
	RevokeAdminToken(ctx context.Context, ref, reason string) (*registry.AdminToken, error)

	InitCA(ctx context.Context, replace bool) (*registry.CertificateAuthority, error)
	CAs(ctx context.Context) ([]registry.CertificateAuthority, error)

	ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error)
	ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error)
	LatestSeq(ctx context.Context) (int64, error)
	Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error)
}

// localOnly are the commands that work on the database or the machine
// itself, with why they cannot run over the admin API; every other admin
// command takes --server (or a saved context).
var localOnly = []struct{ command, why string }{
	{"serve", "it is the server: run it where the database is"},
	{"backup", "it copies the database file; run it on the server's machine"},
	{"restore", "it replaces the database file while no server runs; run it on the server's machine"},
	{"keys", "the key file lives beside the database, and never travels over the network; run it on the server's machine"},
	{"demo", "it runs a simulated fleet on a database and server of its own"},
}

// refusesServer says why a command does not run over --server ("": it does,
// or it needs no database at all).
func refusesServer(command string) string {
	for _, c := range localOnly {
		if command == "tether "+c.command || strings.HasPrefix(command, "tether "+c.command+" ") {
			return c.why
		}
	}
	return ""
}

// localAPI is adminAPI over the database: the registry, and the few calls
// whose local form differs.
type localAPI struct{ *registry.Registry }

func (l localAPI) StepRollout(ctx context.Context, id string) (*registry.Rollout, error) {
	return l.AdvanceRollout(ctx, id)
}

var _ adminAPI = localAPI{}
var _ adminAPI = (*remoteAPI)(nil)

// openAPI opens what an admin command works on: the admin API named
// by --server (its token from --token-file or $TETHER_ADMIN_TOKEN, else the
// saved context for that server), else the current saved context unless
// --db names a database, else the local database. close releases it.
func openAPI(cmd *cobra.Command, g *globals) (api adminAPI, close func(), err error) {
	return openAPIWith(cmd, g, registry.Config{})
}

// openAPIWith is openAPI with the configuration of a local registry.
func openAPIWith(cmd *cobra.Command, g *globals, cfg registry.Config) (api adminAPI, close func(), err error) {
	ctx := cmd.Context()
	server, token, err := remoteTarget(cmd, g)
	if err != nil {
		return nil, nil, err
	}
	if server != "" {
		r, err := connectRemote(ctx, server, token)
		if err != nil {
			return nil, nil, err
		}
		c, _ := adminclient.New(server, token)
		return &remoteAPI{Remote: r, c: c}, func() {}, nil
	}
	a, err := openApp(ctx, g, cfg)
	if err != nil {
		return nil, nil, err
	}
	return localAPI{a.reg}, func() { a.Close() }, nil
}

// remoteTarget says which admin API, if any, a command runs over, and with
// which token.
func remoteTarget(cmd *cobra.Command, g *globals) (server, token string, err error) {
	return remoteTargetOf(g, cmd.Flags().Changed("db"))
}

// remoteTargetOf is remoteTarget for a command line that named a database
// (--db or $TETHER_DB) or did not.
func remoteTargetOf(g *globals, dbGiven bool) (server, token string, err error) {
	server = g.server
	if server == "" && dbGiven {
		return "", "", nil
	}
	cf, _, err := loadContexts()
	if err != nil {
		return "", "", err
	}
	switch {
	case server == "":
		cur := cf.current()
		if cur == nil {
			return "", "", nil
		}
		return cur.Server, cur.Token, nil
	case g.tokenFile != "":
		token, err = readTokenFile(g, g.tokenFile)
		return server, token, err
	case strings.TrimSpace(os.Getenv("TETHER_ADMIN_TOKEN")) != "":
		return server, strings.TrimSpace(os.Getenv("TETHER_ADMIN_TOKEN")), nil
	}
	for _, c := range cf.Contexts {
		if strings.TrimRight(c.Server, "/") == strings.TrimRight(server, "/") {
			return server, c.Token, nil
		}
	}
	return "", "", usagef("an admin token is required with --server: --token-file FILE, $TETHER_ADMIN_TOKEN, or 'tether login %s --token-file FILE' first", server)
}
