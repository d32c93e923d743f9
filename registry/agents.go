package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"time"
)

// Agent is an authenticated agent: the credential it presented and its
// cluster as of the request. Both may be shared with the registry's cache:
// treat them as read-only.
type Agent struct {
	Credential *Credential
	Cluster    *Cluster
}

// Actor is how the agent appears in the audit trail.
func (a *Agent) Actor() Actor {
	return Actor{Kind: ActorAgent, Name: a.Cluster.ID + "/" + a.Credential.ID}
}

// RegisterParams is an agent's registration request.
type RegisterParams struct {
	Token        string
	Capabilities []string
	// PublicKey is the agent's encryption public key (a JWK), or empty: it
	// becomes the cluster's public key, which encrypted payloads are
	// encrypted to.
	PublicKey []byte
	// CSR (PEM), when set, asks tether's CA for a client certificate.
	CSR string
}

// registrationRefusal is why a token was refused. It goes to the audit trail;
// the caller always sees the same CodeRegistrationTokenInvalid error, so that a
// guesser learns nothing about which tokens exist.
type registrationRefusal string

func (r registrationRefusal) Error() string { return string(r) }

func errTokenInvalid(reason string) error {
	return &Error{
		Code:    CodeRegistrationTokenInvalid,
		Message: "registration token is invalid, expired, revoked or already used; ask an admin for a new one (tether token issue CLUSTER)",
		Err:     registrationRefusal(reason),
	}
}

// Register redeems a one-time registration token and issues the cluster's
// credential. Of concurrent redemptions of one token exactly one succeeds.
// A refusal that names an existing token (used, expired, revoked, wrong
// secret, cluster disabled) is audited with its reason; a malformed or
// unknown token is not, so that anonymous callers cannot fill the trail.
func (r *Registry) Register(ctx context.Context, p RegisterParams) (*IssuedCredential, error) {
	caps := negotiate(p.Capabilities)
	tokenID, ok := parseBearer(registrationTokenPrefix, "rt-", strings.TrimSpace(p.Token))
	if !ok {
		return nil, errTokenInvalid("malformed token")
	}
	hash := hashSecret(strings.TrimSpace(p.Token))
	var pub AgentPublicKey
	if len(bytes.TrimSpace(p.PublicKey)) > 0 && string(bytes.TrimSpace(p.PublicKey)) != "null" {
		// Checked before the token is redeemed: a bad key costs no token.
		var err error
		if pub, err = ParseAgentPublicKey("field publicKey", p.PublicKey); err != nil {
			return nil, err
		}
	}
	auditMsg := "capabilities: " + strings.Join(caps, ",")
	if pub != "" {
		auditMsg += "; encryption key " + pub.KeyID()
	}
	now := r.Now()
	cred, secrets, err := r.newCredential("", caps, now)
	if err != nil {
		return nil, err
	}
	cert, err := r.certificateForRegister(ctx, p.CSR, tokenID, &cred)
	if err != nil {
		return nil, err
	}
	var issued *IssuedCredential
	cluster, err := r.store.TokenRedeem(ctx, TokenRedeemParams{
		TokenID: tokenID,
		Now:     now,
		Check: func(t *RegistrationToken, c *Cluster) error {
			if !equalHash(t.Hash, hash) {
				return errTokenInvalid("unknown token (secret does not match)")
			}
			if st := t.State(now); st != TokenActive {
				return errTokenInvalid("token " + string(st))
			}
			if c.State == ClusterDisabled {
				return Errorf(CodeClusterDisabled, "cluster %s is disabled; an admin must enable it before its agent can register", c.ID)
			}
			for _, req := range c.Policy.RequiredCapabilities {
				if !slices.Contains(caps, req) {
					return Errorf(CodeCapabilityRequired, "cluster %s requires the %q capability; register with capabilities %v", c.ID, req, c.Policy.RequiredCapabilities)
				}
			}
			return nil
		},
		Credential: cred,
		PublicKey:  pub,
		Audit:      r.auditEntry(ctx, AuditRegister, "", "credential", cred.ID, auditMsg),
	})
	if ErrorCode(err) == CodeNotFound {
		// Nothing of ours was named: not worth an audit entry (anyone can
		// send these; the server counts them in its metrics).
		return nil, errTokenInvalid("unknown token id")
	}
	if err != nil {
		clusterID := ""
		if t, gerr := r.store.TokenGet(ctx, tokenID); gerr == nil {
			clusterID = t.ClusterID
		}
		var refusal registrationRefusal
		reason := ErrorMessage(err)
		if errors.As(err, &refusal) {
			reason = string(refusal)
		}
		return nil, r.refuseRegistration(ctx, clusterID, tokenID, reason, err)
	}
	cred.ClusterID = cluster.ID
	issued = &IssuedCredential{Credential: cred, Cluster: *cluster, Token: secrets.token, HMACKey: secrets.hmac}
	cert.attach(issued)
	return issued, nil
}

func (r *Registry) refuseRegistration(ctx context.Context, clusterID, tokenID, reason string, err error) error {
	if ErrorCode(err) == CodeInternal || ErrorCode(err) == CodeUnavailable {
		return err
	}
	entry := r.auditEntry(ctx, AuditRegisterFailed, clusterID, "token", tokenID, reason)
	if aerr := r.store.AuditAppend(ctx, entry); aerr != nil {
		return aerr
	}
	return err
}

// negotiate keeps the capabilities tether knows, sorted and de-duplicated;
// unknown ones are ignored, as a v1 server must tolerate what it does not know.
func negotiate(requested []string) []string {
	out := []string{}
	for _, c := range requested {
		c = strings.ToLower(strings.TrimSpace(c))
		if slices.Contains(KnownCapabilities, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

type credentialSecrets struct {
	token Secret
	hmac  Secret
}

func (r *Registry) newCredential(clusterID string, caps []string, now time.Time) (Credential, credentialSecrets, error) {
	id := newCredentialID()
	token := newBearer(credentialTokenPrefix, id)
	cred := Credential{
		ID: id, ClusterID: clusterID, Capabilities: caps,
		CreatedAt: now, ExpiresAt: now.Add(r.cfg.CredentialTTL), RotateAfter: now.Add(r.cfg.RotateAfter),
		RotateUntil: now.Add(r.cfg.CredentialTTL + r.cfg.RotationGrace),
		Hash:        hashSecret(token.Reveal()),
	}
	secrets := credentialSecrets{token: token}
	if slices.Contains(caps, CapabilityHMAC) {
		if r.cfg.Keyring == nil {
			return cred, secrets, Errorf(CodeUnavailable, "this tether has no key file for HMAC keys, so it cannot issue hmac credentials; its admin must start it with --key-file (or register without the hmac capability)")
		}
		key := randomBytes(32)
		sealed, err := r.cfg.Keyring.Seal(key, []byte(id))
		if err != nil {
			return cred, secrets, Internal(err, "seal the new HMAC key")
		}
		cred.SealedHMAC = sealed
		secrets.hmac = Secret(base64.RawURLEncoding.EncodeToString(key))
	}
	return cred, secrets, nil
}

// AuthPurpose is what an agent authenticates for: a credential that may only
// rotate is refused everything else.
type AuthPurpose int

const (
	AuthAny AuthPurpose = iota
	AuthRotate
)

var errUnauthorized = Errorf(CodeUnauthorized, "bearer credential is missing, unknown, expired or revoked")

// Authenticate checks a bearer credential in constant time and returns the
// agent. CodeUnauthorized for an unknown, expired or revoked credential (and
// for a rotate-only credential used for anything but rotation);
// CodeClusterDisabled when the cluster is disabled.
func (r *Registry) Authenticate(ctx context.Context, bearer string, purpose AuthPurpose) (*Agent, error) {
	id, ok := parseBearer(credentialTokenPrefix, "cr-", bearer)
	if !ok {
		return nil, errUnauthorized
	}
	cred, cluster, err := r.credentialWithCluster(ctx, id)
	if ErrorCode(err) == CodeNotFound {
		return nil, errUnauthorized
	}
	if err != nil {
		return nil, err
	}
	if !equalHash(cred.Hash, hashSecret(bearer)) {
		return nil, errUnauthorized
	}
	switch state := cred.State(r.Now()); state {
	case CredentialActive, CredentialGrace:
	case CredentialRotateOnly:
		if purpose != AuthRotate {
			return nil, refused(cred, state, Errorf(CodeUnauthorized, "credential must be rotated before further use (POST /api/agent/credentials/rotate)"))
		}
	default:
		return nil, refused(cred, state, errUnauthorized)
	}
	if cluster.State == ClusterDisabled {
		return nil, Errorf(CodeClusterDisabled, "cluster %s is disabled by an admin", cluster.ID)
	}
	return &Agent{Credential: cred, Cluster: cluster}, nil
}

// credentialWithCluster reads a credential and its cluster through the
// record cache (every agent request authenticates; see cache.go for why
// revocations still take effect at once).
func (r *Registry) credentialWithCluster(ctx context.Context, id string) (*Credential, *Cluster, error) {
	if err := r.hub.start(); err != nil {
		return nil, nil, err
	}
	cred, err := r.cache.credential(ctx, r.store, id)
	if err != nil {
		return nil, nil, err
	}
	cluster, err := r.cache.cluster(ctx, r.store, cred.ClusterID)
	if err != nil {
		return nil, nil, err
	}
	return cred, cluster, nil
}

// HMACKey returns the agent's HMAC key, for verifying signed writes.
func (r *Registry) HMACKey(a *Agent) ([]byte, error) {
	if len(a.Credential.SealedHMAC) == 0 {
		return nil, Errorf(CodeInvalid, "credential %s has no HMAC key", a.Credential.ID)
	}
	if r.cfg.Keyring == nil {
		return nil, Errorf(CodeInternal, "this server has no key file, so it cannot check signatures")
	}
	key, err := r.cfg.Keyring.Open(a.Credential.SealedHMAC, []byte(a.Credential.ID))
	if err == nil {
		return key, nil
	}
	// The cached credential may hold a value re-sealed since (tether keys
	// rotate) under a key since retired: read the stored one.
	fresh, ferr := r.store.CredentialGet(context.Background(), a.Credential.ID)
	if ferr != nil || string(fresh.SealedHMAC) == string(a.Credential.SealedHMAC) {
		return nil, err
	}
	r.cache.evictCredential(a.Credential.ID)
	return r.cfg.Keyring.Open(fresh.SealedHMAC, []byte(a.Credential.ID))
}

// RotateCredential issues the agent a new credential with the same
// capabilities. The old one keeps working for the rotation grace (or less, if
// it expires sooner).
func (r *Registry) RotateCredential(ctx context.Context, a *Agent) (*IssuedCredential, error) {
	return r.RotateCredentialAdding(ctx, a, nil)
}

// RotateCredentialAdding is RotateCredential where the new credential also
// carries the capabilities in add (those tether does not know are ignored, as
// at registration). Capabilities are only ever added: a rotation cannot drop
// what the old credential negotiated. If the cluster's policy now requires a
// capability the new credential would lack, the rotation is refused with
// capability_required and the old credential stays as it was: a credential
// below policy can reach policy at its next rotation, never renew below it.
func (r *Registry) RotateCredentialAdding(ctx context.Context, a *Agent, add []string) (*IssuedCredential, error) {
	return r.RotateCredentialWith(ctx, a, RotateParams{Capabilities: add})
}

// RotateParams is what an agent may ask for at rotation.
type RotateParams struct {
	Capabilities []string // to add (see RotateCredentialAdding)
	CSR          string   // PEM: renew the client certificate with the credential
}

// RotateCredentialWith is RotateCredentialAdding that also issues a client
// certificate for the new credential when p.CSR is set.
func (r *Registry) RotateCredentialWith(ctx context.Context, a *Agent, p RotateParams) (*IssuedCredential, error) {
	add := p.Capabilities
	now := r.Now()
	caps := negotiate(append(append([]string(nil), a.Credential.Capabilities...), add...))
	for _, req := range a.Cluster.Policy.RequiredCapabilities {
		if !slices.Contains(caps, req) {
			return nil, Errorf(CodeCapabilityRequired, "cluster %s now requires the %q capability; rotate with capabilities %v", a.Cluster.ID, req, a.Cluster.Policy.RequiredCapabilities)
		}
	}
	cred, secrets, err := r.newCredential(a.Cluster.ID, caps, now)
	if err != nil {
		return nil, err
	}
	cred.RotatedFrom = a.Credential.ID
	var cert *issuedCert
	if p.CSR != "" {
		if cert, err = r.issueClientCertificate(ctx, p.CSR, a.Cluster.ID, cred.ID, cred.ExpiresAt); err != nil {
			return nil, err
		}
		cred.ClientCertificate = &cert.record
	}
	graceUntil := now.Add(r.cfg.RotationGrace)
	if a.Credential.ExpiresAt.Before(graceUntil) {
		graceUntil = a.Credential.ExpiresAt
	}
	if graceUntil.Before(now) {
		graceUntil = now // an expired credential rotating inside its grace: the old one stops now
	}
	err = r.store.CredentialRotate(ctx, CredentialRotateParams{
		OldID: a.Credential.ID, Now: now, OldExpiresAt: graceUntil, New: cred,
		Audit: r.auditEntry(ctx, AuditCredentialRotate, a.Cluster.ID, "credential", cred.ID, "replaces "+a.Credential.ID+"; old one valid until "+graceUntil.Format(time.RFC3339)+addedCapabilities(a.Credential.Capabilities, caps)),
	})
	r.cache.evictCredential(a.Credential.ID)
	if err != nil {
		return nil, err
	}
	issued := &IssuedCredential{Credential: cred, Cluster: *a.Cluster, Token: secrets.token, HMACKey: secrets.hmac, GraceUntil: graceUntil}
	cert.attach(issued)
	return issued, nil
}

// addedCapabilities describes, for the audit trail, what a rotation added.
func addedCapabilities(old, now []string) string {
	var added []string
	for _, c := range now {
		if !slices.Contains(old, c) {
			added = append(added, c)
		}
	}
	if len(added) == 0 {
		return ""
	}
	return "; adds capabilities " + strings.Join(added, ",")
}

// ListCredentials returns a cluster's credentials, newest first.
func (r *Registry) ListCredentials(ctx context.Context, clusterIDOrName string) ([]Credential, error) {
	c, err := r.GetCluster(ctx, clusterIDOrName)
	if err != nil {
		return nil, err
	}
	creds, err := r.store.CredentialList(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	return creds, r.withClientCertificates(ctx, c.ID, creds)
}

// ForcedRotation is what a forced rotation did.
type ForcedRotation struct {
	Credentials int           // how many live credentials it made due
	Grace       time.Duration // how long they keep working unless the agent rotates
	GraceUntil  time.Time     // when they stop working unless the agent rotates
	// Warning is NeverRotatedWarning when the cluster's agent has never
	// rotated its credential, else empty.
	Warning string
}

// ForceRotation makes a cluster's live credentials due for rotation now and
// cuts their expiry to the rotation grace. Nothing is refused meanwhile: an
// agent that rotates when rotateAfter passes or when an answer carries
// X-Credential-Rotate-After (the reference agent) rotates on its next call,
// and a credential not rotated within the grace stops working. tether
// cannot make an agent rotate: the public operator never reads
// rotateAfter and rotates only when its Cluster resource asks, so it stops
// at the end of the grace unless someone asks it. Revocation is the
// emergency stop. It returns how many credentials it changed.
func (r *Registry) ForceRotation(ctx context.Context, clusterIDOrName, reason string) (int, error) {
	f, err := r.ForceRotationOutcome(ctx, clusterIDOrName, reason)
	return f.Credentials, err
}

// ForceRotationOutcome is ForceRotation, with when the credentials stop
// working and a warning when the cluster's agent has never rotated (see
// AgentNeverRotated).
func (r *Registry) ForceRotationOutcome(ctx context.Context, clusterIDOrName, reason string) (ForcedRotation, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return ForcedRotation{}, err
	}
	c, err := r.GetCluster(ctx, clusterIDOrName)
	if err != nil {
		return ForcedRotation{}, err
	}
	// Read before the change, which does not touch what AgentRotatedAt
	// reads: a rotation by the agent meanwhile only makes the warning
	// one that was true a moment ago.
	creds, err := r.store.CredentialList(ctx, c.ID)
	if err != nil {
		return ForcedRotation{}, err
	}
	now := r.Now()
	f := ForcedRotation{Grace: r.cfg.RotationGrace, GraceUntil: now.Add(r.cfg.RotationGrace)}
	defer r.cache.evictCluster(c.ID)
	f.Credentials, err = r.store.CredentialRestrict(ctx, CredentialRestrictParams{
		ClusterID: c.ID, Now: now, ExpiresAt: f.GraceUntil, RotateUntil: f.GraceUntil, RotateAfter: now, Reason: reason,
		Audit: r.auditEntry(ctx, AuditCredentialForce, c.ID, "cluster", c.ID, reason),
	})
	if err != nil {
		return ForcedRotation{}, err
	}
	if f.Credentials > 0 && AgentNeverRotated(creds, now) {
		f.Warning = NeverRotatedWarning(c, f.Grace, f.GraceUntil)
	}
	return f, nil
}

// RevokeCredentials revokes a cluster's live credentials at once: its agent
// must re-register with a new one-time token. It returns how many it revoked.
func (r *Registry) RevokeCredentials(ctx context.Context, clusterIDOrName, reason string) (int, error) {
	if err := authorize(ctx, PermAdmin); err != nil {
		return 0, err
	}
	c, err := r.GetCluster(ctx, clusterIDOrName)
	if err != nil {
		return 0, err
	}
	now := r.Now()
	defer r.cache.evictCluster(c.ID)
	return r.store.CredentialRestrict(ctx, CredentialRestrictParams{
		ClusterID: c.ID, Now: now, ExpiresAt: now, RotateUntil: now, Revoke: true, Reason: reason,
		Audit: r.auditEntry(ctx, AuditCredentialRevoke, c.ID, "cluster", c.ID, reason),
	})
}

// RecordSignature remembers a signed request's signature until expiresAt,
// in the store, so that every replica (and this one after a restart)
// refuses it if it comes again. It reports whether it was new.
func (r *Registry) RecordSignature(ctx context.Context, credentialID string, signature []byte, expiresAt time.Time) (bool, error) {
	h := sha256.New()
	h.Write([]byte(credentialID))
	h.Write([]byte{0})
	h.Write(signature)
	return r.store.SignatureRecord(ctx, h.Sum(nil), expiresAt, r.Now())
}
