package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/tui"
)

// adminAPI is the registry as the commands that also work remotely use it:
// the registry itself over --db, or remoteAPI over a tether's admin API
// (--server, or a context saved by tether login). Both answer with the
// registry's records and errors, so a command prints the same either way.
type adminAPI interface {
	Now() time.Time
	GetCluster(ctx context.Context, ref string) (*registry.Cluster, error)
	ListClusters(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error)
	ListCredentials(ctx context.Context, cluster string) ([]registry.Credential, error)
	ListTokens(ctx context.Context, cluster string) ([]registry.RegistrationToken, error)
	JobCounts(ctx context.Context) ([]registry.JobCount, error)
	QueueHealth(ctx context.Context, cluster string) (*registry.QueueHealth, error)
	FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error)

	SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, bool, error)
	ListJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error)
	ListStuckJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error)
	GetJob(ctx context.Context, id string) (*registry.Job, error)
	WaitJob(ctx context.Context, id string) (*registry.Job, error)
	JobHistory(ctx context.Context, id string) ([]registry.JobHistoryEntry, error)
	RequeueJob(ctx context.Context, id, reason string) (*registry.Job, error)
	CancelJob(ctx context.Context, id, reason string) (*registry.Job, error)
	RetryJob(ctx context.Context, id, reason string) (*registry.Job, error)
	DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error)
	ExtendLease(ctx context.Context, id string, by time.Duration) (*registry.Job, error)

	ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error)
	ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error)
	LatestSeq(ctx context.Context) (int64, error)
	Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error)
}

// remoteCommands are the commands that run over the admin API with
// --server (or a saved context); every other one refuses --server rather
// than quietly work on a local database.
var remoteCommands = []string{
	"job submit", "job list", "job get", "job requeue", "job cancel", "job retry", "job delete", "job extend-lease",
	"cluster list", "cluster get", "events", "audit", "console",
}

func remoteCapable(command string) bool {
	for _, c := range remoteCommands {
		if strings.HasSuffix(command, " "+c) {
			return true
		}
	}
	return false
}

var _ adminAPI = (*registry.Registry)(nil)
var _ adminAPI = (*remoteAPI)(nil)

// openAPI opens what a remote-capable command works on: the admin API named
// by --server (its token from --token-file or $TETHER_ADMIN_TOKEN, else the
// saved context for that server), else the current saved context unless
// --db names a database, else the local database. close releases it.
func openAPI(cmd *cobra.Command, g *globals) (api adminAPI, close func(), err error) {
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
	a, err := openApp(ctx, g, registry.Config{})
	if err != nil {
		return nil, nil, err
	}
	return a.reg, func() { a.Close() }, nil
}

// remoteTarget says which admin API, if any, a command runs over, and with
// which token.
func remoteTarget(cmd *cobra.Command, g *globals) (server, token string, err error) {
	server = g.server
	if server == "" && cmd.Flags().Changed("db") {
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

// remoteAPI is adminAPI over a tether's admin API: the console's remote
// backend, and the calls only the CLI makes.
type remoteAPI struct {
	*tui.Remote
	c *adminclient.Client
}

func (r *remoteAPI) call(ctx context.Context, method, path string, q url.Values, body, out any, opts ...adminclient.CallOption) error {
	return remoteError(r.c.Call(ctx, method, path, q, body, out, opts...))
}

// remoteError gives an admin API refusal the registry's shape: its code and
// message, which the CLI prints and maps to exit codes as it does locally.
func remoteError(err error) error {
	var ae *adminclient.Error
	if errors.As(err, &ae) {
		return registry.Errorf(registry.Code(ae.Code), "%s", ae.Message)
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return registry.Errorf(registry.CodeUnavailable, "cannot reach tether's admin API: %v", err)
	}
	return err
}

func apiPath(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("/" + url.PathEscape(p))
	}
	return b.String()
}

func (r *remoteAPI) ListClusters(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error) {
	q := url.Values{"limit": {"1000"}}
	for k, v := range map[string]string{"state": string(p.State), "org": p.Organization, "selector": p.Selector} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out []registry.Cluster
	for {
		var page struct {
			Items      []registry.Cluster `json:"items"`
			NextCursor string             `json:"nextCursor"`
		}
		if err := r.call(ctx, http.MethodGet, "/clusters", q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

func (r *remoteAPI) QueueHealth(ctx context.Context, cluster string) (*registry.QueueHealth, error) {
	var q registry.QueueHealth
	if err := r.call(ctx, http.MethodGet, apiPath("clusters", cluster, "queue"), nil, nil, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

func (r *remoteAPI) FleetQueueHealth(ctx context.Context) ([]registry.QueueHealth, error) {
	var page struct {
		Items []registry.QueueHealth `json:"items"`
	}
	err := r.call(ctx, http.MethodGet, "/queues", nil, nil, &page)
	return page.Items, err
}

func (r *remoteAPI) SubmitJob(ctx context.Context, s registry.JobSubmission) (*registry.Job, bool, error) {
	body := map[string]any{"cluster": s.ClusterID, "kind": s.Kind, "payload": s.Payload}
	if s.IdempotencyKey != "" {
		body["idempotencyKey"] = s.IdempotencyKey
	}
	if s.ExpiresIn > 0 {
		body["expiresIn"] = s.ExpiresIn.String()
	}
	var j registry.Job
	replayed := false
	err := r.call(ctx, http.MethodPost, "/jobs", nil, body, &j,
		adminclient.OnResponse(func(resp *http.Response) { replayed = resp.Header.Get("Idempotent-Replayed") == "true" }))
	if err != nil {
		return nil, false, err
	}
	return &j, !replayed, nil
}

func (r *remoteAPI) ListStuckJobs(ctx context.Context, p registry.JobListParams) ([]registry.Job, error) {
	q := url.Values{"stuck": {"true"}}
	if len(p.ClusterIDs) > 0 {
		q.Set("cluster", strings.Join(p.ClusterIDs, ","))
	}
	if p.Kind != "" {
		q.Set("kind", string(p.Kind))
	}
	if p.Search != "" {
		q.Set("search", p.Search)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(p.Limit, 1000)))
	}
	var page struct {
		Items []registry.Job `json:"items"`
	}
	err := r.call(ctx, http.MethodGet, "/jobs", q, nil, &page)
	return page.Items, err
}

// WaitJob asks the server to hold the answer until the job ends, again
// while it has not and ctx allows.
func (r *remoteAPI) WaitJob(ctx context.Context, id string) (*registry.Job, error) {
	for {
		var j registry.Job
		if err := r.call(ctx, http.MethodGet, apiPath("jobs", id), url.Values{"wait": {"300"}}, nil, &j); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if j.State.Terminal() {
			return &j, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (r *remoteAPI) RetryJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	var j registry.Job
	if err := r.call(ctx, http.MethodPost, apiPath("jobs", id, "retry"), nil, body, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

func (r *remoteAPI) DeleteJob(ctx context.Context, id, reason string) (*registry.Job, error) {
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	var j registry.Job
	if err := r.call(ctx, http.MethodDelete, apiPath("jobs", id), nil, body, &j); err != nil {
		return nil, err
	}
	return &j, nil
}
