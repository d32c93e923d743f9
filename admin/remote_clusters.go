package admin

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/tetherhq/tether/adminclient"
	"github.com/tetherhq/tether/registry"
)

// Remote's clusters, registration tokens, credentials, admin tokens and CA.

func (r *Remote) ListClusters(ctx context.Context, p registry.ClusterListParams) ([]registry.Cluster, error) {
	q := adminclient.ClusterQuery{State: string(p.State), Org: p.Organization, Selector: p.Selector, Limit: remotePage}
	return allPages[registry.Cluster](r, func(cursor string, into adminclient.CallOption) error {
		q.Cursor = cursor
		_, err := r.c.ListClusters(ctx, q, into)
		return err
	})
}

func (r *Remote) GetCluster(ctx context.Context, ref string) (*registry.Cluster, error) {
	var c registry.Cluster
	_, err := r.c.GetCluster(ctx, ref, adminclient.Into(&c))
	return one(r, &c, err)
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
	body, err := convert[adminclient.ClusterSpec](spec)
	if err != nil {
		return nil, nil, err
	}
	var out struct {
		Cluster           registry.Cluster `json:"cluster"`
		RegistrationToken issuedToken      `json:"registrationToken"`
	}
	if _, _, err := r.c.CreateCluster(ctx, body, ttl, adminclient.Into(&out)); err != nil {
		return nil, nil, r.fail(err)
	}
	return &out.Cluster, out.RegistrationToken.registry(r.Now()), nil
}

// UpdateCluster sends every field, empty ones too: the API's PATCH is a
// merge, and a field the person cleared is cleared.
func (r *Remote) UpdateCluster(ctx context.Context, id string, version int64, spec registry.ClusterSpec) (*registry.Cluster, error) {
	patch := map[string]any{}
	if err := fullJSON(spec, patch); err != nil {
		return nil, err
	}
	var c registry.Cluster
	_, err := r.c.UpdateCluster(ctx, id, version, patch, adminclient.Into(&c))
	return one(r, &c, err)
}

// ModifyCluster applies edit to the cluster as it is and writes it with
// If-Match, again on the version a concurrent change left: what the
// registry's ModifyCluster does, over HTTP.
func (r *Remote) ModifyCluster(ctx context.Context, ref string, edit func(*registry.ClusterSpec) error) (*registry.Cluster, error) {
	const attempts = 5
	var err error
	for range attempts {
		var c *registry.Cluster
		if c, err = r.GetCluster(ctx, ref); err != nil {
			return nil, err
		}
		spec := c.ClusterSpec
		if err := edit(&spec); err != nil {
			return nil, err
		}
		var updated *registry.Cluster
		updated, err = r.UpdateCluster(ctx, c.ID, c.Version, spec)
		if registry.ErrorCode(err) != registry.CodeConflict {
			return updated, err
		}
		// Only a lost compare-and-swap is worth another try.
		if now, gerr := r.GetCluster(ctx, c.ID); gerr != nil || now.Version == c.Version {
			return nil, err
		}
	}
	return nil, err
}

func (r *Remote) SetClusterEnabled(ctx context.Context, ref string, enabled bool, reason string) (*registry.Cluster, error) {
	var c registry.Cluster
	_, err := r.c.SetClusterEnabled(ctx, ref, enabled, reason, adminclient.Into(&c))
	return one(r, &c, err)
}

func (r *Remote) SetClusterPaused(ctx context.Context, ref string, paused bool, reason string) (*registry.Cluster, error) {
	var c registry.Cluster
	_, err := r.c.SetClusterPaused(ctx, ref, paused, reason, adminclient.Into(&c))
	return one(r, &c, err)
}

func (r *Remote) DeleteCluster(ctx context.Context, ref, reason string) (*registry.Cluster, error) {
	var c registry.Cluster
	err := r.c.DeleteCluster(ctx, ref, reason, adminclient.Into(&c))
	return one(r, &c, err)
}

func (r *Remote) RotateSigningKey(ctx context.Context, ref string, overlap time.Duration) (*registry.SigningKey, error) {
	var out struct {
		ClusterID string       `json:"clusterId"`
		CreatedAt time.Time    `json:"createdAt"`
		Key       registry.JWK `json:"key"`
	}
	if _, err := r.c.RotateSigningKey(ctx, ref, overlap, adminclient.Into(&out)); err != nil {
		return nil, r.fail(err)
	}
	pub, err := out.Key.Ed25519PublicKey()
	if err != nil {
		return nil, registry.Errorf(registry.CodeInternal, "tether answered a signing key that is not Ed25519: %v", err)
	}
	return &registry.SigningKey{ID: out.Key.Kid, ClusterID: out.ClusterID, PublicKey: pub, CreatedAt: out.CreatedAt,
		EndorsedBy: out.Key.EndorsedBy, Endorsement: out.Key.Endorsement}, nil
}

func (r *Remote) IssueToken(ctx context.Context, cluster string, ttl time.Duration) (*registry.IssuedToken, error) {
	var t issuedToken
	if _, err := r.c.IssueToken(ctx, cluster, ttl, adminclient.Into(&t)); err != nil {
		return nil, r.fail(err)
	}
	return t.registry(r.Now()), nil
}

func (r *Remote) ListTokens(ctx context.Context, cluster string) ([]registry.RegistrationToken, error) {
	return allPages[registry.RegistrationToken](r, func(cursor string, into adminclient.CallOption) error {
		_, err := r.c.ListTokens(ctx, cluster, remotePage, cursor, into)
		return err
	})
}

// RevokeToken names the token by its id: given the secret itself, it sends
// only the id the secret carries (a path ends up in logs).
func (r *Remote) RevokeToken(ctx context.Context, id, reason string) (*registry.RegistrationToken, error) {
	var t registry.RegistrationToken
	err := r.c.RevokeToken(ctx, registry.RegistrationTokenID(id), reason, adminclient.Into(&t))
	return one(r, &t, err)
}

func (r *Remote) ListCredentials(ctx context.Context, cluster string) ([]registry.Credential, error) {
	return allPages[registry.Credential](r, func(cursor string, into adminclient.CallOption) error {
		_, err := r.c.ListCredentials(ctx, cluster, remotePage, cursor, into)
		return err
	})
}

func (r *Remote) ForceRotation(ctx context.Context, cluster, reason string) (registry.ForcedRotation, error) {
	out, err := r.c.RotateCredentials(ctx, cluster, reason)
	if err != nil {
		return registry.ForcedRotation{}, r.fail(err)
	}
	return registry.ForcedRotation{Credentials: out.Credentials, Grace: time.Duration(out.RotationGraceSeconds) * time.Second,
		GraceUntil: out.GraceUntil, Warning: out.Warning}, nil
}

// RotationGrace is not known before a forced rotation answers it.
func (r *Remote) RotationGrace() time.Duration { return 0 }

func (r *Remote) RevokeCredentials(ctx context.Context, cluster, reason string) (int, error) {
	out, err := r.c.RevokeCredentials(ctx, cluster, reason)
	if err != nil {
		return 0, r.fail(err)
	}
	return out.Credentials, nil
}

func (r *Remote) IssueAdminToken(ctx context.Context, s registry.AdminTokenSpec) (*registry.IssuedAdminToken, error) {
	spec := adminclient.AdminTokenSpec{Name: s.Name, Role: string(s.Role), Org: s.Org, SSHKeys: s.SSHKeys}
	if s.TTL > 0 {
		spec.Expires = s.TTL.String()
	}
	var out struct {
		registry.AdminToken
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	issued, err := r.c.CreateAdminToken(ctx, spec, adminclient.Into(&out))
	if err != nil {
		return nil, r.fail(err)
	}
	t := out.AdminToken
	if out.ExpiresAt != nil {
		t.ExpiresAt = *out.ExpiresAt
	}
	return &registry.IssuedAdminToken{Token: t, Secret: registry.Secret(issued.Token)}, nil
}

func (r *Remote) SetAdminTokenSSHKeys(ctx context.Context, ref string, keys []string) (*registry.AdminToken, error) {
	var t registry.AdminToken
	_, err := r.c.SetAdminTokenSSHKeys(ctx, ref, keys, adminclient.Into(&t))
	return one(r, &t, err)
}

func (r *Remote) ListAdminTokens(ctx context.Context) ([]registry.AdminToken, error) {
	var page adminclient.Page[registry.AdminToken]
	if _, err := r.c.ListAdminTokens(ctx, adminclient.Into(&page)); err != nil {
		return nil, r.fail(err)
	}
	return page.Items, nil
}

func (r *Remote) RevokeAdminToken(ctx context.Context, ref, reason string) (*registry.AdminToken, error) {
	var t registry.AdminToken
	_, err := r.c.RevokeAdminToken(ctx, ref, reason, adminclient.Into(&t))
	return one(r, &t, err)
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
