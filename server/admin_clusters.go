package server

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The admin API's clusters: the identity records, their registration tokens
// and credentials. A cluster is named by id or name in the path.

type clusterCursor struct {
	Name string `json:"n"`
	ID   string `json:"i"`
}

func (s *Server) adminListClusters(c *call) error {
	q := c.r.URL.Query()
	limit, cursor, err := pageParams(q)
	if err != nil {
		return err
	}
	p := registry.ClusterListParams{State: registry.ClusterState(q.Get("state")), Organization: q.Get("org"), Selector: q.Get("selector")}
	switch p.State {
	case "", registry.ClusterPending, registry.ClusterActive, registry.ClusterDisabled:
	default:
		return errf(registry.CodeInvalid, "state %q is not one of pending, active, disabled", p.State)
	}
	if cursor != "" {
		var after clusterCursor
		if err := decodeCursor(cursor, &after); err != nil {
			return err
		}
		p.After = &registry.ClusterCursor{Name: after.Name, ID: after.ID}
	}
	p.Limit = limit + 1 // one more tells whether there is a next page
	clusters, err := s.reg.ListClusters(c.ctx, p)
	if err != nil {
		return err
	}
	out := list[registry.Cluster]{Items: clusters}
	if len(clusters) > limit {
		last := &clusters[limit-1]
		out.Items, out.NextCursor = clusters[:limit], encodeCursor(clusterCursor{last.Name, last.ID})
	}
	return writeJSON(c.w, http.StatusOK, out)
}

// clusterCreateBody is a cluster spec, and the lifetime of its first
// registration token.
type clusterCreateBody struct {
	registry.ClusterSpec
	RegistrationTokenTTL string `json:"registrationTokenTtl,omitempty"`
}

// issuedTokenJSON is how a registration token is answered: the one time its
// secret is shown.
type issuedTokenJSON struct {
	ID        string    `json:"id"`
	ClusterID string    `json:"clusterId"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func tokenJSON(t *registry.IssuedToken) issuedTokenJSON {
	return issuedTokenJSON{ID: t.Token.ID, ClusterID: t.Token.ClusterID, Token: t.Secret.Reveal(), ExpiresAt: t.Token.ExpiresAt.UTC()}
}

func (s *Server) adminCreateCluster(c *call) error {
	body := clusterCreateBody{ClusterSpec: registry.ClusterSpec{Policy: registry.DefaultPolicy()}}
	if err := decodeAdmin(c, &body, true); err != nil {
		return err
	}
	ttl, err := parseDurationField("registrationTokenTtl", body.RegistrationTokenTTL)
	if err != nil {
		return err
	}
	cl, issued, err := s.reg.CreateCluster(c.ctx, body.ClusterSpec, ttl)
	if err != nil {
		return err
	}
	setVersion(c.w, cl.Version)
	return writeJSON(c.w, http.StatusCreated, struct {
		Cluster           *registry.Cluster `json:"cluster"`
		RegistrationToken issuedTokenJSON   `json:"registrationToken"`
	}{cl, tokenJSON(issued)})
}

func (s *Server) adminGetCluster(c *call) error {
	cl, err := s.reg.GetCluster(c.ctx, c.params["c"])
	if err != nil {
		return err
	}
	setVersion(c.w, cl.Version)
	return writeJSON(c.w, http.StatusOK, cl)
}

// adminPatchCluster changes a cluster's spec with compare-and-swap on
// If-Match. With Content-Type application/merge-patch+json the body is an
// RFC 7396 merge patch (a label set to null is removed, others are kept);
// with application/json, fields present replace the current ones whole
// (labels included), as tether has always taken it.
func (s *Server) adminPatchCluster(c *call) error {
	match := strings.Trim(strings.TrimPrefix(strings.TrimSpace(c.r.Header.Get("If-Match")), "W/"), `"`)
	if match == "" {
		return errf(CodePreconditionRequired, "PATCH needs If-Match: <version>, the version you read (the ETag of GET %s/clusters/{cluster}), so that a concurrent change is not overwritten", adminPrefix)
	}
	version, err := strconv.ParseInt(match, 10, 64)
	if err != nil || version < 1 {
		return errf(registry.CodeInvalid, "If-Match %q is not a version: versions are whole numbers from 1", match)
	}
	cur, err := s.reg.GetCluster(c.ctx, c.params["c"])
	if err != nil {
		return err
	}
	if isMergePatch(c.r.Header.Get("Content-Type")) {
		spec, err := mergePatchSpec(cur.ClusterSpec, c.body)
		if err != nil {
			return err
		}
		return s.updateCluster(c, cur.ID, version, spec)
	}
	spec := cur.ClusterSpec
	if patchHas(c.body, "labels") {
		// Decoding into the current map would add the patch's labels to
		// the current ones, and a label left out (the console and the CLI's
		// --remove-label send every label the cluster keeps) would stay.
		spec.Labels = nil
	}
	if err := decodeAdmin(c, &spec, true); err != nil {
		return err
	}
	return s.updateCluster(c, cur.ID, version, spec)
}

func (s *Server) updateCluster(c *call, id string, version int64, spec registry.ClusterSpec) error {
	cl, err := s.reg.UpdateCluster(c.ctx, id, version, spec)
	if err != nil {
		return err
	}
	setVersion(c.w, cl.Version)
	return writeJSON(c.w, http.StatusOK, cl)
}

// patchHas reports whether a JSON object body has the field name (matched
// without regard to case, as encoding/json matches it).
func patchHas(body []byte, name string) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return false // decodeAdmin says what is wrong with it
	}
	for k := range fields {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func setVersion(w http.ResponseWriter, v int64) {
	w.Header().Set("ETag", `"`+strconv.FormatInt(v, 10)+`"`)
}

// adminDeleteCluster deletes a cluster and everything it owns. The reason
// comes as ?reason= or in a JSON body, as a job's delete takes it.
func (s *Server) adminDeleteCluster(c *call) error {
	reason, err := queryOrBodyReason(c)
	if err != nil {
		return err
	}
	cl, err := s.reg.DeleteCluster(c.ctx, c.params["c"], reason)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, cl)
}

func (s *Server) adminSetEnabled(enabled bool) func(*call) error {
	return func(c *call) error {
		reason, err := readReason(c)
		if err != nil {
			return err
		}
		cl, err := s.reg.SetClusterEnabled(c.ctx, c.params["c"], enabled, reason)
		if err != nil {
			return err
		}
		setVersion(c.w, cl.Version)
		return writeJSON(c.w, http.StatusOK, cl)
	}
}

func (s *Server) adminSetPaused(paused bool) func(*call) error {
	return func(c *call) error {
		reason, err := readReason(c)
		if err != nil {
			return err
		}
		cl, err := s.reg.SetClusterPaused(c.ctx, c.params["c"], paused, reason)
		if err != nil {
			return err
		}
		setVersion(c.w, cl.Version)
		return writeJSON(c.w, http.StatusOK, cl)
	}
}

func (s *Server) adminIssueToken(c *call) error {
	var body struct {
		TTL string `json:"ttl"`
	}
	if err := decodeAdmin(c, &body, false); err != nil {
		return err
	}
	ttl, err := parseDurationField("ttl", body.TTL)
	if err != nil {
		return err
	}
	issued, err := s.reg.IssueToken(c.ctx, c.params["c"], ttl)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusCreated, tokenJSON(issued))
}

// credentialJSONView is a credential as admins see it: its state, never its
// secrets.
type credentialJSONView struct {
	registry.Credential
	State registry.CredentialState `json:"state"`
	// AgentRotatedAt: when its agent last rotated (Credential.AgentRotatedAt);
	// null when it has not since it registered.
	AgentRotatedAt *time.Time `json:"agentRotatedAt"`
}

func adminCredentialJSON(c registry.Credential, now time.Time) credentialJSONView {
	v := credentialJSONView{Credential: c, State: c.State(now)}
	if at := c.AgentRotatedAt(); !at.IsZero() {
		v.AgentRotatedAt = &at
	}
	return v
}

func (s *Server) adminListCredentials(c *call) error {
	creds, err := s.reg.ListCredentials(c.ctx, c.params["c"])
	if err != nil {
		return err
	}
	now := s.reg.Now()
	items := make([]credentialJSONView, len(creds))
	for i := range creds {
		items[i] = adminCredentialJSON(creds[i], now)
	}
	return writeJSON(c.w, http.StatusOK, list[credentialJSONView]{Items: items})
}

// adminForceRotation answers how many credentials it made due, when they
// stop working unless the agent rotates, and the warning when the agent has
// never rotated (clients say so without knowing the server's
// configuration).
func (s *Server) adminForceRotation(c *call) error {
	reason, err := readReason(c)
	if err != nil {
		return err
	}
	f, err := s.reg.ForceRotationOutcome(c.ctx, c.params["c"], reason)
	if err != nil {
		return err
	}
	out := forcedRotationJSON{Credentials: f.Credentials, RotationGraceSeconds: int64(f.Grace / time.Second), Warning: f.Warning}
	if f.Credentials > 0 {
		out.GraceUntil = &f.GraceUntil
	}
	return writeJSON(c.w, http.StatusOK, out)
}

type forcedRotationJSON struct {
	Credentials          int        `json:"credentials"`
	RotationGraceSeconds int64      `json:"rotationGraceSeconds"`
	GraceUntil           *time.Time `json:"graceUntil,omitempty"`
	Warning              string     `json:"warning,omitempty"`
}

func (s *Server) adminRevokeCredentials(c *call) error {
	reason, err := readReason(c)
	if err != nil {
		return err
	}
	n, err := s.reg.RevokeCredentials(c.ctx, c.params["c"], reason)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, map[string]int64{"credentials": int64(n)})
}

// adminRevokeToken revokes an unused registration token, named by its id
// (never by its secret: a path ends up in logs).
func (s *Server) adminRevokeToken(c *call) error {
	reason, err := readReason(c)
	if err != nil {
		return err
	}
	t, err := s.reg.RevokeToken(c.ctx, c.params["t"], reason)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, t)
}

// rotatedKeyJSON is a cluster's new payload-signing key: its public half,
// and until when the previous one still verifies.
type rotatedKeyJSON struct {
	ClusterID    string       `json:"clusterId"`
	CreatedAt    time.Time    `json:"createdAt"`
	OverlapUntil time.Time    `json:"overlapUntil"`
	Key          registry.JWK `json:"key"`
}

func (s *Server) adminRotateSigningKey(c *call) error {
	var body struct {
		Overlap string `json:"overlap"`
	}
	if err := decodeAdmin(c, &body, false); err != nil {
		return err
	}
	overlap, err := parseDurationField("overlap", body.Overlap)
	if err != nil {
		return err
	}
	k, err := s.reg.RotateSigningKey(c.ctx, c.params["c"], overlap)
	if err != nil {
		return err
	}
	if overlap == 0 {
		overlap = registry.DefaultSigningKeyOverlap
	}
	return writeJSON(c.w, http.StatusOK, rotatedKeyJSON{ClusterID: k.ClusterID, CreatedAt: k.CreatedAt.UTC(),
		OverlapUntil: k.CreatedAt.Add(overlap).UTC(), Key: k.JWK()})
}

// parseDurationField reads a duration given as Go syntax or whole days
// ("90s", "15m", "24h", "7d"); empty is zero (the default).
func parseDurationField(field, v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n > 0 {
			if n > math.MaxInt64/int(24*time.Hour) {
				// time.Duration(n) * 24h would wrap around, to a negative
				// or an arbitrary duration.
				return 0, errf(registry.CodeInvalid, "%s %q is longer than any duration a time can be moved by (about 290 years)", field, v)
			}
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errf(registry.CodeInvalid, "%s %q is not a positive duration such as 90s, 15m, 24h or 7d", field, v)
	}
	return d, nil
}
