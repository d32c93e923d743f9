package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// Remote is the Backend over a tether's admin API: the console run from
// another machine (tether console --server URL). Every call is one request
// with the admin token; what the token's role may not do the server refuses
// (and the console hides, see Role), and what its organization may not see
// does not exist. The answers are the registry's own records, which the API
// serves as JSON.
type Remote struct {
	c *adminclient.Client
	// Role and Org are the token's, as GET /whoami answers them.
	Role  registry.Role
	Org   string
	Actor string
	skew  time.Duration // the server's clock minus this machine's
	conn  remoteConn    // the watch's connection, for the header
}

var _ Backend = (*Remote)(nil)

// remotePage is the most a list request asks for: the API's largest page.
const remotePage = 1000

// NewRemote connects to the admin API and learns who the token is. An
// unreachable server or a refused token is an error here, before the
// console starts.
func NewRemote(ctx context.Context, c *adminclient.Client) (*Remote, error) {
	var who struct {
		Actor string        `json:"actor"`
		Role  registry.Role `json:"role"`
		Org   string        `json:"org"`
	}
	if err := c.Call(ctx, http.MethodGet, "/whoami", nil, nil, &who); err != nil {
		return nil, remoteErr(err)
	}
	r := &Remote{c: c, Role: who.Role, Org: who.Org, Actor: who.Actor}
	// Ages and countdowns are measured against the server's clock, as a
	// local console's are: learn how far this machine's is from it.
	var stats struct {
		At time.Time `json:"at"`
	}
	sent := time.Now()
	if err := r.call(ctx, http.MethodGet, "/stats", nil, nil, &stats); err != nil {
		return nil, err
	}
	rtt := time.Since(sent)
	r.skew = stats.At.Sub(sent.Add(rtt / 2))
	return r, nil
}

// ReadOnly reports whether the token may change nothing: its console hides
// every action rather than let them fail.
func (r *Remote) ReadOnly() bool { return r.Role == registry.RoleViewer }

// remoteErr turns the API's answers into registry errors (the console shows
// their messages) and says plainly when the server cannot be reached.
func remoteErr(err error) error {
	if err == nil {
		return nil
	}
	var apiErr *adminclient.Error
	if errors.As(err, &apiErr) {
		return registry.Errorf(registry.Code(apiErr.Code), "%s", apiErr.Message)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return registry.Errorf(registry.CodeUnavailable, "cannot reach tether's admin API: %v", err)
}

func (r *Remote) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	return r.unreachable(remoteErr(r.c.Call(ctx, method, path, q, body, out)))
}

func ref(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("/" + url.PathEscape(p))
	}
	return b.String()
}

type items[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// all follows a list's cursor to its end.
func all[T any](ctx context.Context, r *Remote, path string, q url.Values) ([]T, error) {
	if q == nil {
		q = url.Values{}
	}
	q.Set("limit", strconv.Itoa(remotePage))
	out := []T{} // an empty list is empty, not null, as the local backend has it
	for {
		var page items[T]
		if err := r.call(ctx, http.MethodGet, path, q, nil, &page); err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out, nil
		}
		q.Set("cursor", page.NextCursor)
	}
}

// Now is the server's clock, as this machine's corrected by the difference
// measured at connection.
func (r *Remote) Now() time.Time { return time.Now().Add(r.skew) }

// watchKinds names the feed's entity kinds as GET /watch takes them.
var watchKinds = map[registry.EntityKind]string{
	registry.EntityCluster: "clusters", registry.EntityJob: "jobs", registry.EntityEvent: "events",
	registry.EntityAudit: "audit", registry.EntityRollout: "rollouts", registry.EntityToken: "tokens",
	registry.EntityCredential: "credentials",
}

func (r *Remote) Watch(ctx context.Context, p registry.WatchParams) (<-chan registry.WatchEvent, error) {
	opts := adminclient.WatchOptions{Since: p.Since}
	for _, k := range p.Kinds {
		name, ok := watchKinds[k]
		if !ok {
			return nil, registry.Errorf(registry.CodeInvalid, "kind %q cannot be watched", k)
		}
		opts.Kinds = append(opts.Kinds, name)
	}
	// The console shows a lost connection and reconnects itself (resume),
	// rather than have the client retry silently.
	var broke error
	opts.NoRetry = true
	opts.OnError = func(err error) { broke = err }
	in, err := r.c.Watch(ctx, opts)
	if err != nil {
		return nil, remoteErr(err)
	}
	r.setConn(func(s *connState) {
		if !s.lostAt.IsZero() {
			*s = connState{back: max(r.Now().Sub(s.lostAt), time.Millisecond)}
		}
	})
	buf := p.Buffer
	if buf <= 0 {
		buf = 256
	}
	out := make(chan registry.WatchEvent, buf)
	go r.resume(ctx, opts, in, &broke, out)
	return out, nil
}

// watchEvent decodes a watch event's object into the registry's record.
func watchEvent(ev adminclient.WatchEvent) (registry.WatchEvent, error) {
	we := registry.WatchEvent{Type: registry.WatchEventType(ev.Type), Seq: ev.Seq, Kind: registry.EntityKind(ev.Kind),
		ID: ev.ID, ClusterID: ev.ClusterID}
	if len(ev.Object) == 0 || string(ev.Object) == "null" {
		return we, nil
	}
	var dst any
	switch we.Kind {
	case registry.EntityCluster:
		we.Cluster = &registry.Cluster{}
		dst = we.Cluster
	case registry.EntityJob:
		we.Job = &registry.Job{}
		dst = we.Job
	case registry.EntityEvent:
		we.Event = &registry.Event{}
		dst = we.Event
	case registry.EntityAudit:
		we.Audit = &registry.AuditEntry{}
		dst = we.Audit
	case registry.EntityRollout:
		we.Rollout = &registry.Rollout{}
		dst = we.Rollout
	case registry.EntityToken:
		we.Token = &registry.RegistrationToken{}
		dst = we.Token
	case registry.EntityCredential:
		we.Credential = &registry.Credential{}
		dst = we.Credential
	default:
		return we, fmt.Errorf("unknown kind %q", ev.Kind)
	}
	return we, json.Unmarshal(ev.Object, dst)
}

func (r *Remote) LatestSeq(ctx context.Context) (int64, error) {
	var stats struct {
		FeedSeq int64 `json:"feedSeq"`
	}
	err := r.call(ctx, http.MethodGet, "/stats", nil, nil, &stats)
	return stats.FeedSeq, err
}

func (r *Remote) ListClusters(ctx context.Context) ([]registry.Cluster, error) {
	return all[registry.Cluster](ctx, r, "/clusters", nil)
}

func (r *Remote) GetCluster(ctx context.Context, id string) (*registry.Cluster, error) {
	var c registry.Cluster
	if err := r.call(ctx, http.MethodGet, ref("clusters", id), nil, nil, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// issuedToken is how the API shows a registration token the one time it
// can.
type issuedToken struct {
	ID        string    `json:"id"`
	ClusterID string    `json:"clusterId"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (t issuedToken) registry(now time.Time) *registry.IssuedToken {
	return &registry.IssuedToken{
		Token:  registry.RegistrationToken{ID: t.ID, ClusterID: t.ClusterID, ExpiresAt: t.ExpiresAt, CreatedAt: now},
		Secret: registry.Secret(t.Token),
	}
}

func (r *Remote) CreateCluster(ctx context.Context, spec registry.ClusterSpec, ttl time.Duration) (*registry.Cluster, *registry.IssuedToken, error) {
	body := map[string]any{}
	if err := fullJSON(spec, body); err != nil {
		return nil, nil, err
	}
	if ttl > 0 {
		body["registrationTokenTtl"] = ttl.String()
	}
	var out struct {
		Cluster           registry.Cluster `json:"cluster"`
		RegistrationToken issuedToken      `json:"registrationToken"`
	}
	if err := r.call(ctx, http.MethodPost, "/clusters", nil, body, &out); err != nil {
		return nil, nil, err
	}
	return &out.Cluster, out.RegistrationToken.registry(r.Now()), nil
}

func (r *Remote) UpdateCluster(ctx context.Context, id string, version int64, spec registry.ClusterSpec) (*registry.Cluster, error) {
	// PATCH is a merge: every field is sent, empty ones too, so that a
	// field the person cleared is cleared.
	body := map[string]any{}
	if err := fullJSON(spec, body); err != nil {
		return nil, err
	}
	var c registry.Cluster
	err := remoteErr(r.c.Call(ctx, http.MethodPatch, ref("clusters", id), nil, body, &c,
		adminclient.WithHeader(http.Header{"If-Match": {strconv.Quote(strconv.FormatInt(version, 10))}})))
	if err != nil {
		return nil, err
	}
	return &c, nil
}

func (r *Remote) clusterAction(ctx context.Context, id, action, reason string) (*registry.Cluster, error) {
	var c registry.Cluster
	if err := r.call(ctx, http.MethodPost, ref("clusters", id, action), nil, reasonBody(reason), &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func reasonBody(reason string) any {
	if reason == "" {
		return nil
	}
	return map[string]string{"reason": reason}
}

func (r *Remote) SetClusterEnabled(ctx context.Context, id string, enabled bool, reason string) (*registry.Cluster, error) {
	return r.clusterAction(ctx, id, map[bool]string{true: "enable", false: "disable"}[enabled], reason)
}

func (r *Remote) SetClusterPaused(ctx context.Context, id string, paused bool, reason string) (*registry.Cluster, error) {
	return r.clusterAction(ctx, id, map[bool]string{true: "pause", false: "resume"}[paused], reason)
}

func (r *Remote) DeleteCluster(ctx context.Context, id, reason string) (*registry.Cluster, error) {
	var q url.Values
	if reason != "" {
		q = url.Values{"reason": {reason}}
	}
	var c registry.Cluster
	if err := r.call(ctx, http.MethodDelete, ref("clusters", id), q, nil, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func (r *Remote) IssueToken(ctx context.Context, clusterID string, ttl time.Duration) (*registry.IssuedToken, error) {
	var body any
	if ttl > 0 {
		body = map[string]string{"ttl": ttl.String()}
	}
	var t issuedToken
	if err := r.call(ctx, http.MethodPost, ref("clusters", clusterID, "registration-tokens"), nil, body, &t); err != nil {
		return nil, err
	}
	return t.registry(r.Now()), nil
}

func (r *Remote) ListTokens(ctx context.Context, clusterID string) ([]registry.RegistrationToken, error) {
	if clusterID == "" {
		return all[registry.RegistrationToken](ctx, r, "/registration-tokens", nil)
	}
	return all[registry.RegistrationToken](ctx, r, ref("clusters", clusterID, "registration-tokens"), nil)
}

func (r *Remote) ListCredentials(ctx context.Context, clusterID string) ([]registry.Credential, error) {
	return all[registry.Credential](ctx, r, ref("clusters", clusterID, "credentials"), nil)
}

func (r *Remote) credentialAction(ctx context.Context, clusterID, action, reason string) (int, error) {
	var out struct {
		Credentials int `json:"credentials"`
	}
	err := r.call(ctx, http.MethodPost, ref("clusters", clusterID, "credentials", action), nil, reasonBody(reason), &out)
	return out.Credentials, err
}

// RotationGrace is not known before a forced rotation answers it.
func (r *Remote) RotationGrace() time.Duration { return 0 }

func (r *Remote) ForceRotation(ctx context.Context, clusterID, reason string) (int, error) {
	return r.credentialAction(ctx, clusterID, "rotate", reason)
}

func (r *Remote) RevokeCredentials(ctx context.Context, clusterID, reason string) (int, error) {
	return r.credentialAction(ctx, clusterID, "revoke", reason)
}

// entryQuery is the query of the events and audit lists.
func entryQuery(cluster string, before, after int64, limit int) url.Values {
	q := url.Values{}
	if cluster != "" {
		q.Set("cluster", cluster)
	}
	if before > 0 {
		q.Set("beforeId", strconv.FormatInt(before, 10))
	}
	if after > 0 {
		q.Set("afterId", strconv.FormatInt(after, 10))
	}
	if limit <= 0 || limit > remotePage {
		limit = remotePage
	}
	q.Set("limit", strconv.Itoa(limit))
	return q
}

func (r *Remote) ListEvents(ctx context.Context, p registry.EventListParams) ([]registry.Event, error) {
	q := entryQuery(p.ClusterID, p.BeforeID, p.AfterID, p.Limit)
	if len(p.Kinds) > 0 {
		q.Set("kind", strings.Join(p.Kinds, ","))
	}
	if p.FalseOnly {
		q.Set("falseOnly", "true")
	}
	var page items[registry.Event]
	err := r.call(ctx, http.MethodGet, "/events", q, nil, &page)
	return page.Items, err
}

func (r *Remote) ListAudit(ctx context.Context, p registry.AuditListParams) ([]registry.AuditEntry, error) {
	q := entryQuery(p.ClusterID, p.BeforeID, p.AfterID, p.Limit)
	if p.Action != "" {
		q.Set("action", p.Action)
	}
	var page items[registry.AuditEntry]
	err := r.call(ctx, http.MethodGet, "/audit", q, nil, &page)
	return page.Items, err
}

func (r *Remote) ListRollouts(ctx context.Context) ([]registry.Rollout, error) {
	return all[registry.Rollout](ctx, r, "/rollouts", nil)
}

func (r *Remote) GetRollout(ctx context.Context, id string) (*registry.Rollout, error) {
	var ro registry.Rollout
	if err := r.call(ctx, http.MethodGet, ref("rollouts", id), nil, nil, &ro); err != nil {
		return nil, err
	}
	return &ro, nil
}

func (r *Remote) RolloutAction(ctx context.Context, id, action, reason string) (*registry.Rollout, error) {
	if _, ok := rolloutActions[action]; !ok {
		return nil, registry.Errorf(registry.CodeInvalid, "rollout action %q is not one of pause, resume, abort, retry-failed", action)
	}
	var ro registry.Rollout
	if err := r.call(ctx, http.MethodPost, ref("rollouts", id, action), nil, reasonBody(reason), &ro); err != nil {
		return nil, err
	}
	return &ro, nil
}

// fullJSON puts v's JSON fields into m, with the fields encoding/json would
// omit as empty written as their zero value: sent as a merge patch, a
// field the person emptied is emptied rather than left as it was.
func fullJSON(v any, m map[string]any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	addZeroes(reflect.ValueOf(v), m)
	return nil
}

func addZeroes(v reflect.Value, m map[string]any) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			addZeroes(v.Field(i), m)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Time{}) {
			sub, _ := m[name].(map[string]any)
			if sub == nil {
				sub = map[string]any{}
				m[name] = sub
			}
			addZeroes(v.Field(i), sub)
			continue
		}
		if _, ok := m[name]; !ok {
			m[name] = reflect.Zero(f.Type).Interface()
		}
	}
}
