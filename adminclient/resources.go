package adminclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The admin API's resources, as this client sees them. Fields the server
// adds later are ignored; see the admin API's documentation for each.

// Policy is how tether treats a cluster's jobs and agents.
type Policy struct {
	LeaseSeconds         int      `json:"leaseSeconds"`
	MaxAttempts          int      `json:"maxAttempts"`
	RequiredCapabilities []string `json:"requiredCapabilities"`
	// RequireClientCertificate: the agent must present a client
	// certificate naming the cluster (mTLS).
	RequireClientCertificate bool `json:"requireClientCertificate,omitempty"`
	// RequireSignedPayloads: every job handed to the agent is signed with
	// the cluster's signing key; AllowLegacyPayloadSignatures adds the
	// payload-only signature older agents verify.
	RequireSignedPayloads        bool `json:"requireSignedPayloads,omitempty"`
	AllowLegacyPayloadSignatures bool `json:"allowLegacyPayloadSignatures,omitempty"`
	// RequireEncryptedPayloads: payloads travel and are stored encrypted to
	// the cluster's PublicKey.
	RequireEncryptedPayloads bool `json:"requireEncryptedPayloads,omitempty"`
}

// ClusterSpec is the part of a cluster an admin writes.
type ClusterSpec struct {
	Name         string            `json:"name"`
	Organization string            `json:"organization,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	// PublicKey is the agent's public key as a JWK, payloads are encrypted
	// to (with Policy.RequireEncryptedPayloads).
	PublicKey                 json.RawMessage `json:"publicKey,omitempty"`
	AllowedNamespaces         []string        `json:"allowedNamespaces,omitempty"`
	AllowedCatalogEntries     []string        `json:"allowedCatalogEntries,omitempty"`
	AllowedOperationTemplates []string        `json:"allowedOperationTemplates,omitempty"`
	Mode                      string          `json:"mode,omitempty"`
	Policy                    *Policy         `json:"policy,omitempty"`
}

// Cluster is a cluster's record and observed status.
type Cluster struct {
	ID                        string            `json:"id"`
	Name                      string            `json:"name"`
	Organization              string            `json:"organization"`
	Labels                    map[string]string `json:"labels"`
	AllowedNamespaces         []string          `json:"allowedNamespaces"`
	AllowedCatalogEntries     []string          `json:"allowedCatalogEntries"`
	AllowedOperationTemplates []string          `json:"allowedOperationTemplates"`
	Mode                      string            `json:"mode"`
	Policy                    Policy            `json:"policy"`
	State                     string            `json:"state"`
	Version                   int64             `json:"version"`
	CreatedAt                 time.Time         `json:"createdAt"`
	UpdatedAt                 time.Time         `json:"updatedAt"`
	RegisteredAt              time.Time         `json:"registeredAt"`
	Status                    struct {
		LastHeartbeatAt time.Time `json:"lastHeartbeatAt"`
		Capabilities    []string  `json:"capabilities"`
	} `json:"status"`
}

// RegistrationToken is a one-time token, shown when it is issued.
type RegistrationToken struct {
	ID        string    `json:"id"`
	ClusterID string    `json:"clusterId"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// ClusterQuery filters ListClusters.
type ClusterQuery struct {
	State    string // pending, active, disabled
	Org      string
	Selector string // a label selector: env=prod,region in (eu,us)
	Limit    int
	Cursor   string
}

// ListClusters returns a page of clusters, by name.
func (c *Client) ListClusters(ctx context.Context, q ClusterQuery, opts ...CallOption) (*Page[Cluster], error) {
	v := pageQuery(q.Limit, q.Cursor)
	setIf(v, "state", q.State)
	setIf(v, "org", q.Org)
	setIf(v, "selector", q.Selector)
	var out Page[Cluster]
	return &out, c.call(ctx, request{method: http.MethodGet, path: "/clusters", query: v, out: &out}, opts)
}

// GetCluster returns a cluster by id or name.
func (c *Client) GetCluster(ctx context.Context, cluster string, opts ...CallOption) (*Cluster, error) {
	var out Cluster
	return &out, c.call(ctx, request{method: http.MethodGet, path: path("clusters", cluster), out: &out}, opts)
}

// CreateCluster creates a cluster and returns it with its first
// registration token (tokenTTL zero: the server's default).
func (c *Client) CreateCluster(ctx context.Context, spec ClusterSpec, tokenTTL time.Duration, opts ...CallOption) (*Cluster, *RegistrationToken, error) {
	body := struct {
		ClusterSpec
		TTL string `json:"registrationTokenTtl,omitempty"`
	}{ClusterSpec: spec}
	if tokenTTL > 0 {
		body.TTL = tokenTTL.String()
	}
	var out struct {
		Cluster           Cluster           `json:"cluster"`
		RegistrationToken RegistrationToken `json:"registrationToken"`
	}
	if err := c.call(ctx, request{method: http.MethodPost, path: "/clusters", body: body, out: &out}, opts); err != nil {
		return nil, nil, err
	}
	return &out.Cluster, &out.RegistrationToken, nil
}

// UpdateCluster merges patch (a JSON object of spec fields: name,
// allowedNamespaces, labels, policy, ...) into the cluster if it is still at
// version; a concurrent change is an *Error with code "conflict".
func (c *Client) UpdateCluster(ctx context.Context, cluster string, version int64, patch map[string]any, opts ...CallOption) (*Cluster, error) {
	var out Cluster
	h := http.Header{}
	h.Set("If-Match", `"`+strconv.FormatInt(version, 10)+`"`)
	return &out, c.call(ctx, request{method: http.MethodPatch, path: path("clusters", cluster), body: patch, header: h, out: &out}, opts)
}

// SetClusterEnabled disables or enables a cluster.
func (c *Client) SetClusterEnabled(ctx context.Context, cluster string, enabled bool, why string, opts ...CallOption) (*Cluster, error) {
	action := "disable"
	if enabled {
		action = "enable"
	}
	var out Cluster
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("clusters", cluster, action), body: reason(why), out: &out}, opts)
}

// DeleteCluster deletes a cluster and everything it owns.
func (c *Client) DeleteCluster(ctx context.Context, cluster, why string, opts ...CallOption) error {
	q := url.Values{}
	setIf(q, "reason", why)
	return c.call(ctx, request{method: http.MethodDelete, path: path("clusters", cluster), query: q}, opts)
}

// IssueToken issues a new registration token (ttl zero: the default).
func (c *Client) IssueToken(ctx context.Context, cluster string, ttl time.Duration, opts ...CallOption) (*RegistrationToken, error) {
	body := map[string]string{}
	if ttl > 0 {
		body["ttl"] = ttl.String()
	}
	var out RegistrationToken
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("clusters", cluster, "registration-tokens"), body: body, out: &out}, opts)
}

// RevokeToken revokes an unused registration token by its id (rt-...);
// one already used or revoked is an *Error with code "conflict".
func (c *Client) RevokeToken(ctx context.Context, tokenID, why string, opts ...CallOption) error {
	return c.call(ctx, request{method: http.MethodPost, path: path("registration-tokens", tokenID, "revoke"), body: reason(why)}, opts)
}

// SigningKey is a cluster's new payload-signing key, as a JSON Web Key.
type SigningKey struct {
	ClusterID string    `json:"clusterId"`
	CreatedAt time.Time `json:"createdAt"`
	// OverlapUntil is when the previous key leaves the cluster's key set.
	OverlapUntil time.Time `json:"overlapUntil"`
	Key          struct {
		Kty string `json:"kty"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Kid string `json:"kid"`
		Alg string `json:"alg,omitempty"`
		Use string `json:"use,omitempty"`
		// EndorsedBy and Endorsement: the key this one replaced, and its
		// signature introducing this one (key continuity).
		EndorsedBy  string `json:"endorsedBy,omitempty"`
		Endorsement string `json:"endorsement,omitempty"`
	} `json:"key"`
}

// RotateSigningKey gives the cluster a new payload-signing key; the previous
// one keeps verifying for overlap (zero: the server's default).
func (c *Client) RotateSigningKey(ctx context.Context, cluster string, overlap time.Duration, opts ...CallOption) (*SigningKey, error) {
	body := map[string]string{}
	if overlap > 0 {
		body["overlap"] = overlap.String()
	}
	var out SigningKey
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("clusters", cluster, "signing-keys", "rotate"), body: body, out: &out}, opts)
}

// Job is a job as the admin API shows it.
type Job struct {
	ID             string          `json:"id"`
	ClusterID      string          `json:"clusterId"`
	Kind           string          `json:"kind"`
	Intent         string          `json:"intent"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotencyKey"`
	State          string          `json:"state"`
	Attempt        int             `json:"attempt"`
	CreatedAt      time.Time       `json:"createdAt"`
	UpdatedAt      time.Time       `json:"updatedAt"`
	ExpiresAt      time.Time       `json:"expiresAt"`
	SubmittedBy    string          `json:"submittedBy"`
	RetryOf        string          `json:"retryOf"` // the job this one retries (RetryJob)
	ClaimID        string          `json:"claimId"`
	LeaseExpiresAt time.Time       `json:"leaseExpiresAt"`
	Phase          string          `json:"phase"`
	Outcome        string          `json:"outcome"`
	Error          string          `json:"error"`
	Result         json.RawMessage `json:"result"`
	FinishedAt     time.Time       `json:"finishedAt"`
	Target         struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"target"`
	// RetriedBy names the jobs retried from this one, oldest first
	// (GetJob only): a job retried already need not be retried again.
	RetriedBy []string `json:"retriedBy"`
	// Timeline is the job's history (GetJob only).
	Timeline []struct {
		At      time.Time `json:"at"`
		Type    string    `json:"type"`
		Actor   string    `json:"actor"`
		State   string    `json:"state"`
		Message string    `json:"message"`
	} `json:"timeline"`
	// Replayed is set by SubmitJob when the idempotency key answered a job
	// of the cluster already (open, or submitted with the key within the
	// server's key retention, 24 h by default, whatever its state), and
	// that job is the answer. The same key with another kind or payload is
	// an *Error with code conflict.
	Replayed bool `json:"-"`
}

// Terminal reports whether the job has ended.
func (j *Job) Terminal() bool { return j.State != "queued" && j.State != "in_progress" }

// Succeeded reports whether the job ended well (succeeded, or a no-op).
func (j *Job) Succeeded() bool { return j.State == "succeeded" || j.State == "noop" }

// Submission is a job to submit.
type Submission struct {
	Cluster        string          `json:"cluster"` // id or name
	Kind           string          `json:"kind"`    // apply, delete or intent
	Payload        json.RawMessage `json:"payload,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	ExpiresIn      string          `json:"expiresIn,omitempty"` // e.g. "1h"
}

// SubmitJob queues a job. With wait > 0 (at most 5 minutes) it returns once
// the job has ended, or as it stands when wait passes (check Terminal). A
// policy refusal is an *Error with the rule as its code
// (namespace_not_allowed, catalog_entry_not_allowed,
// operation_template_not_allowed).
func (c *Client) SubmitJob(ctx context.Context, s Submission, wait time.Duration, opts ...CallOption) (*Job, error) {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", seconds(wait))
	}
	var out Job
	err := c.call(ctx, request{method: http.MethodPost, path: "/jobs", query: q, body: s, out: &out,
		replied: func(r *http.Response) { out.Replayed = r.Header.Get("Idempotent-Replayed") == "true" }}, opts)
	return &out, err
}

// GetJob returns a job with its timeline; with wait > 0 it blocks as
// SubmitJob does.
func (c *Client) GetJob(ctx context.Context, id string, wait time.Duration, opts ...CallOption) (*Job, error) {
	q := url.Values{}
	if wait > 0 {
		q.Set("wait", seconds(wait))
	}
	var out Job
	return &out, c.call(ctx, request{method: http.MethodGet, path: path("jobs", id), query: q, out: &out}, opts)
}

// JobQuery filters ListJobs and CountJobs.
type JobQuery struct {
	Clusters       []string // ids or names
	ExceptClusters []string // ids or names whose jobs are left out
	States         []string
	Kind           string
	Search         string
	Error          string // the jobs that failed with this error code
	Stuck          bool
	// LeaseExpiredBefore, LeaseLiveAt, ActivityBefore, FinishedAfter: the
	// jobs whose lease expired before, is live at, whose last change was
	// before, or which ended after the time (zero: any).
	LeaseExpiredBefore time.Time
	LeaseLiveAt        time.Time
	ActivityBefore     time.Time
	FinishedAfter      time.Time
	NoLease            bool // the jobs without a lease
	OldestFirst        bool // oldest first (default: newest first)
	// After (CountJobs): count the jobs after this one's place in the
	// order.
	After  string
	Offset int
	Limit  int
	Cursor string
}

func (q JobQuery) values() url.Values {
	v := pageQuery(q.Limit, q.Cursor)
	for _, cl := range q.Clusters {
		v.Add("cluster", cl)
	}
	for _, cl := range q.ExceptClusters {
		v.Add("exceptCluster", cl)
	}
	if len(q.States) > 0 {
		v.Set("state", strings.Join(q.States, ","))
	}
	setIf(v, "kind", q.Kind)
	setIf(v, "search", q.Search)
	setIf(v, "error", q.Error)
	if q.Stuck {
		v.Set("stuck", "true")
	}
	for k, t := range map[string]time.Time{"leaseExpiredBefore": q.LeaseExpiredBefore, "leaseLiveAt": q.LeaseLiveAt,
		"activityBefore": q.ActivityBefore, "finishedAfter": q.FinishedAfter} {
		if !t.IsZero() {
			v.Set(k, t.UTC().Format(time.RFC3339Nano))
		}
	}
	if q.NoLease {
		v.Set("noLease", "true")
	}
	if q.OldestFirst {
		v.Set("order", "oldest")
	}
	setIf(v, "after", q.After)
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	return v
}

// ListJobs returns a page of jobs, newest first.
func (c *Client) ListJobs(ctx context.Context, q JobQuery, opts ...CallOption) (*Page[Job], error) {
	var out Page[Job]
	return &out, c.call(ctx, request{method: http.MethodGet, path: "/jobs", query: q.values(), out: &out}, opts)
}

// CountJobs counts the jobs that match q (its Limit, Offset and Cursor
// aside).
func (c *Client) CountJobs(ctx context.Context, q JobQuery, opts ...CallOption) (int, error) {
	q.Limit, q.Offset, q.Cursor = 0, 0, ""
	var out struct {
		Count int `json:"count"`
	}
	return out.Count, c.call(ctx, request{method: http.MethodGet, path: "/jobs/count", query: q.values(), out: &out}, opts)
}

// ShowJobPayload returns a job with its timeline and its sealed payload
// opened: admin only, and audited.
func (c *Client) ShowJobPayload(ctx context.Context, id string, opts ...CallOption) (*Job, error) {
	var out Job
	return &out, c.call(ctx, request{method: http.MethodGet, path: path("jobs", id), query: url.Values{"showPayload": {"true"}}, out: &out}, opts)
}

// RequeueJobWith is RequeueJob with the expiry of a job that would expire
// at once extended by extendExpiry (zero: not extended).
func (c *Client) RequeueJobWith(ctx context.Context, id, why string, extendExpiry time.Duration, opts ...CallOption) (*Job, error) {
	return c.RequeueJobOpts(ctx, id, RequeueOptions{Reason: why, ExtendExpiry: extendExpiry}, opts...)
}

// RequeueOptions are a requeue's choices beyond the job.
type RequeueOptions struct {
	Reason string // for the job's timeline and the audit trail
	// ExtendExpiry, when set, moves the expiry of a job that would expire
	// at once to that long from now, with the requeue.
	ExtendExpiry time.Duration
	// Attempt, when > 0, is the attempt to requeue, as the caller saw the
	// job: a job that has moved on to another attempt is left alone and the
	// call fails with 409 conflict (saying which attempt and claim it is at).
	Attempt int
}

// RequeueJobOpts is RequeueJob with all its options.
func (c *Client) RequeueJobOpts(ctx context.Context, id string, o RequeueOptions, opts ...CallOption) (*Job, error) {
	body := map[string]any{}
	if o.Reason != "" {
		body["reason"] = o.Reason
	}
	if o.ExtendExpiry > 0 {
		body["extendExpiry"] = o.ExtendExpiry.String()
	}
	if o.Attempt != 0 {
		body["attempt"] = o.Attempt
	}
	return c.jobAction(ctx, id, "requeue", body, opts...)
}

// RequeueJob, CancelJob: the job actions, with a reason for the audit trail.
func (c *Client) RequeueJob(ctx context.Context, id, why string, opts ...CallOption) (*Job, error) {
	return c.jobAction(ctx, id, "requeue", reason(why), opts...)
}

func (c *Client) CancelJob(ctx context.Context, id, why string, opts ...CallOption) (*Job, error) {
	return c.jobAction(ctx, id, "cancel", reason(why), opts...)
}

// RetryJob submits a failed, conflicting, expired or canceled job again as
// a new job (its RetryOf names the original), and returns the new job.
func (c *Client) RetryJob(ctx context.Context, id, why string, opts ...CallOption) (*Job, error) {
	return c.jobAction(ctx, id, "retry", reason(why), opts...)
}

// DeleteJob deletes a finished job with its timeline and returns it as it
// was; a queued or in-progress one is refused with job_not_finished (cancel
// it first).
func (c *Client) DeleteJob(ctx context.Context, id, why string, opts ...CallOption) (*Job, error) {
	var out Job
	return &out, c.call(ctx, request{method: http.MethodDelete, path: path("jobs", id), body: reason(why), out: &out}, opts)
}

// ExtendLease gives a leased job's holder more time.
func (c *Client) ExtendLease(ctx context.Context, id string, by time.Duration, opts ...CallOption) (*Job, error) {
	return c.jobAction(ctx, id, "extend-lease", map[string]string{"by": by.String()}, opts...)
}

func (c *Client) jobAction(ctx context.Context, id, action string, body any, opts ...CallOption) (*Job, error) {
	var out Job
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("jobs", id, action), body: body, out: &out}, opts)
}

// Stats is the number of jobs per state, overall and per cluster id.
type Stats struct {
	Jobs     map[string]int64            `json:"jobs"`
	Clusters map[string]map[string]int64 `json:"clusters"`
	At       time.Time                   `json:"at"`
	// FeedSeq is the change feed's position (Watch's Since).
	FeedSeq int64 `json:"feedSeq"`
}

// QueueHealth is how a cluster's queue is doing. Figures that are unknown
// (nothing queued, no claim or nothing finished in the last hour) are nil.
type QueueHealth struct {
	ClusterID      string    `json:"clusterId"`
	At             time.Time `json:"at"`
	Queued         int64     `json:"queued"`
	InFlight       int64     `json:"inFlight"`
	OldestQueuedAt time.Time `json:"oldestQueuedAt"`
	// OldestQueuedSeconds is how long the oldest queued job has waited.
	OldestQueuedSeconds *float64 `json:"oldestQueuedSeconds"`
	// WaitP50Seconds is the median wait from submit to claim over
	// WaitSamples claims of the last hour.
	WaitP50Seconds *float64  `json:"waitP50Seconds"`
	WaitSamples    int       `json:"waitSamples"`
	LastClaimAt    time.Time `json:"lastClaimAt"`
	// FailureRate is Failed / Finished, of the jobs submitted in the last
	// hour that have ended (canceled ones aside).
	FailureRate *float64 `json:"failureRate"`
	Finished    int64    `json:"finished"`
	Failed      int64    `json:"failed"`
	// NotDraining: jobs wait, none is in flight or was claimed lately, while
	// the agent heartbeats and the queue is not paused. Reason says so.
	NotDraining bool   `json:"notDraining"`
	Reason      string `json:"reason"`
}

// Stats returns the job counts.
func (c *Client) Stats(ctx context.Context, opts ...CallOption) (*Stats, error) {
	var out Stats
	return &out, c.call(ctx, request{method: http.MethodGet, path: "/stats", out: &out}, opts)
}

// Queues returns the queue health of every cluster, in name order.
func (c *Client) Queues(ctx context.Context, opts ...CallOption) ([]QueueHealth, error) {
	var out Page[QueueHealth]
	return out.Items, c.call(ctx, request{method: http.MethodGet, path: "/queues", out: &out}, opts)
}

// ClusterQueue returns one cluster's queue health, by id or name.
func (c *Client) ClusterQueue(ctx context.Context, cluster string, opts ...CallOption) (*QueueHealth, error) {
	var out QueueHealth
	return &out, c.call(ctx, request{method: http.MethodGet, path: path("clusters", cluster, "queue"), out: &out}, opts)
}

// AuditEntry is one entry of the audit trail.
type AuditEntry struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	Actor      string    `json:"actor"`
	Action     string    `json:"action"`
	ClusterID  string    `json:"clusterId"`
	TargetKind string    `json:"targetKind"`
	TargetID   string    `json:"targetId"`
	Reason     string    `json:"reason"`
}

// Rollout is a rollout with its counts and (from GetRollout) its targets.
type Rollout struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Selector    string         `json:"selector"`
	Kind        string         `json:"kind"`
	MaxParallel int            `json:"maxParallel"`
	MaxFailures int            `json:"maxFailures"`
	State       string         `json:"state"`
	Counts      map[string]int `json:"counts"`
	CreatedAt   time.Time      `json:"createdAt"`
	FinishedAt  time.Time      `json:"finishedAt"`
	Targets     []struct {
		Position    int    `json:"position"`
		ClusterID   string `json:"clusterId"`
		ClusterName string `json:"clusterName"`
		State       string `json:"state"`
		Reason      string `json:"reason"`
		JobID       string `json:"jobId"`
		Attempts    int    `json:"attempts"`
	} `json:"targets"`
}

// RolloutSpec creates a rollout.
type RolloutSpec struct {
	Name         string          `json:"name,omitempty"`
	Selector     string          `json:"selector"`
	Kind         string          `json:"kind"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	MaxParallel  int             `json:"maxParallel,omitempty"`
	MaxFailures  int             `json:"maxFailures,omitempty"`
	PauseBetween string          `json:"pauseBetween,omitempty"`
	Order        string          `json:"order,omitempty"`
	DryRun       bool            `json:"dryRun,omitempty"`
}

// CreateRollout creates (or, with DryRun, only plans) a rollout.
func (c *Client) CreateRollout(ctx context.Context, spec RolloutSpec, opts ...CallOption) (*Rollout, error) {
	var out Rollout
	return &out, c.call(ctx, request{method: http.MethodPost, path: "/rollouts", body: spec, out: &out}, opts)
}

// GetRollout returns a rollout by id or name, with every target.
func (c *Client) GetRollout(ctx context.Context, rollout string, opts ...CallOption) (*Rollout, error) {
	var out Rollout
	return &out, c.call(ctx, request{method: http.MethodGet, path: path("rollouts", rollout), out: &out}, opts)
}

// RolloutAction is "pause", "resume", "abort" or "retry-failed".
func (c *Client) RolloutAction(ctx context.Context, rollout, action, why string, opts ...CallOption) (*Rollout, error) {
	var out Rollout
	return &out, c.call(ctx, request{method: http.MethodPost, path: path("rollouts", rollout, action), body: reason(why), out: &out}, opts)
}

func setIf(v url.Values, k, value string) {
	if value != "" {
		v.Set(k, value)
	}
}
