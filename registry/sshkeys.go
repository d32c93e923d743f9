package registry

import (
	"context"
	"crypto/rsa"
	"slices"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/ssh"
)

// SSHKey is a public key that opens the console over SSH as the admin
// identity holding it. Only public halves are ever kept.
type SSHKey struct {
	// Fingerprint is the key's SHA-256 fingerprint as OpenSSH prints it
	// ("SHA256:..."): what ssh-keygen -lf shows its owner.
	Fingerprint string `json:"fingerprint"`
	// PublicKey is the key in authorized_keys form ("ssh-ed25519 AAAA...").
	PublicKey string `json:"publicKey"`
	// Comment is the key's comment (often user@host), for people only.
	Comment string `json:"comment,omitempty"`
}

// SSH key limits.
const (
	MaxSSHKeysPerIdentity = 16
	minRSABits            = 2048
	maxSSHKeyComment      = 100
	// AuditAdminTokenSSHKeys: an admin identity's SSH keys were replaced.
	AuditAdminTokenSSHKeys = "admin_token.ssh_keys"
)

// ParseSSHKeys reads authorized_keys lines (blank lines and # comments
// skipped): Ed25519, ECDSA, security-key and RSA (of at least 2048 bits)
// keys without options. A key given twice is kept once.
func ParseSSHKeys(lines []string) ([]SSHKey, error) {
	var out []SSHKey
	for _, text := range lines {
		for line := range strings.SplitSeq(text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, err := parseSSHKey(line)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(out, func(o SSHKey) bool { return o.Fingerprint == k.Fingerprint }) {
				out = append(out, k)
			}
		}
	}
	if len(out) > MaxSSHKeysPerIdentity {
		return nil, Errorf(CodeInvalid, "%d SSH keys given; an admin identity holds at most %d", len(out), MaxSSHKeysPerIdentity)
	}
	return out, nil
}

func parseSSHKey(line string) (SSHKey, error) {
	pub, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		if strings.Contains(line, "PRIVATE KEY") {
			return SSHKey{}, Errorf(CodeInvalid, "this is a private key: give the public one (the .pub file next to it), and keep the private key to yourself")
		}
		return SSHKey{}, Errorf(CodeInvalid, "not an SSH public key in authorized_keys form (\"ssh-ed25519 AAAA... comment\"; the .pub file ssh-keygen wrote)")
	}
	if len(options) > 0 || len(strings.TrimSpace(string(rest))) > 0 {
		return SSHKey{}, Errorf(CodeInvalid, "SSH key %s has authorized_keys options or trailing text, which tether would not enforce: give the bare key", ssh.FingerprintSHA256(pub))
	}
	if _, ok := pub.(*ssh.Certificate); ok {
		return SSHKey{}, Errorf(CodeInvalid, "SSH certificates are not accepted: give the plain public key")
	}
	switch pub.Type() {
	case ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521, ssh.KeyAlgoSKED25519, ssh.KeyAlgoSKECDSA256:
	case ssh.KeyAlgoRSA:
		ck, ok := pub.(ssh.CryptoPublicKey)
		rk, isRSA := ck.CryptoPublicKey().(*rsa.PublicKey)
		if !ok || !isRSA || rk.N.BitLen() < minRSABits {
			return SSHKey{}, Errorf(CodeInvalid, "RSA key %s is shorter than %d bits: use an Ed25519 key (ssh-keygen -t ed25519)", ssh.FingerprintSHA256(pub), minRSABits)
		}
	default:
		return SSHKey{}, Errorf(CodeInvalid, "SSH key type %s is not accepted: use an Ed25519 key (ssh-keygen -t ed25519)", pub.Type())
	}
	// A comment is for people: kept printable only (no control codes,
	// no bidi overrides), since it reaches terminals.
	comment = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, comment)
	if r := []rune(comment); len(r) > maxSSHKeyComment {
		comment = string(r[:maxSSHKeyComment])
	}
	return SSHKey{
		Fingerprint: ssh.FingerprintSHA256(pub),
		PublicKey:   strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))),
		Comment:     strings.TrimSpace(comment),
	}, nil
}

// SSHKeyLines is keys in authorized_keys form, one a line: how the stores
// keep them.
func SSHKeyLines(keys []SSHKey) string {
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		line := k.PublicKey
		if k.Comment != "" {
			line += " " + k.Comment
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// SSHKeysFromLines reads what SSHKeyLines wrote (a store's column).
func SSHKeysFromLines(text string) ([]SSHKey, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	keys, err := ParseSSHKeys([]string{text})
	if err != nil {
		return nil, Errorf(CodeInternal, "an admin identity's stored SSH keys are damaged: %s", ErrorMessage(err))
	}
	return keys, nil
}

func sshKeyFingerprints(keys []SSHKey) string {
	fps := make([]string, len(keys))
	for i, k := range keys {
		fps[i] = k.Fingerprint
	}
	return strings.Join(fps, ", ")
}

// HasSSHKey reports whether the token holds the key of this fingerprint.
func (t *AdminToken) HasSSHKey(fingerprint string) bool {
	return slices.ContainsFunc(t.SSHKeys, func(k SSHKey) bool { return k.Fingerprint == fingerprint })
}

// sshKeysFree refuses keys that an unrevoked identity other than exceptID
// already holds: a key opens one identity, never a choice of them. The
// other identity is not named: it may be another organization's.
func (r *Registry) sshKeysFree(ctx context.Context, exceptID string, keys []SSHKey) error {
	if len(keys) == 0 {
		return nil
	}
	all, err := r.store.AdminTokenList(ctx)
	if err != nil {
		return err
	}
	for _, t := range all {
		if t.ID == exceptID || !t.RevokedAt.IsZero() {
			continue
		}
		for _, k := range keys {
			if t.HasSSHKey(k.Fingerprint) {
				return Errorf(CodeConflict, "SSH key %s already belongs to another admin identity: a key opens one identity only; give each person their own key", k.Fingerprint)
			}
		}
	}
	return nil
}

// SetAdminTokenSSHKeys replaces the SSH keys of the unrevoked admin identity
// with this name (or id) by lines (authorized_keys form; none: it can no
// longer open the console over SSH, and its open sessions end). Admin only,
// within its organization; audited with the keys' fingerprints.
func (r *Registry) SetAdminTokenSSHKeys(ctx context.Context, nameOrID string, lines []string) (*AdminToken, error) {
	tokens, err := r.ListAdminTokens(ctx)
	if err != nil {
		return nil, err
	}
	ref := strings.TrimSpace(nameOrID)
	var target *AdminToken
	for i := range tokens {
		t := &tokens[i]
		if (t.ID == ref || t.Name == ref) && t.RevokedAt.IsZero() {
			target = t
			break
		}
	}
	if target == nil {
		return nil, Errorf(CodeNotFound, "no live admin token is named %q (tether admin-token list shows them)", ref)
	}
	keys, err := ParseSSHKeys(lines)
	if err != nil {
		return nil, err
	}
	if err := r.sshKeysFree(ctx, target.ID, keys); err != nil {
		return nil, err
	}
	what := "no SSH keys"
	if len(keys) > 0 {
		what = "SSH keys " + sshKeyFingerprints(keys)
	}
	defer r.cache.evictAdminTokens()
	return r.store.AdminTokenSetSSHKeys(ctx, AdminTokenSSHKeysParams{
		ID: target.ID, Keys: keys,
		Audit: r.auditEntry(ctx, AuditAdminTokenSSHKeys, "", "admin_token", target.ID, what),
	})
}

// SSHIdentity is who an SSH public key authenticates as.
type SSHIdentity struct {
	Actor       Actor
	TokenID     string
	Fingerprint string
}

var errSSHUnauthorized = Errorf(CodeUnauthorized, "SSH key unknown, or its admin identity expired or revoked")

// AuthenticateSSHKey returns the identity whose live admin token holds the
// public key (in SSH wire form). Every failure is the same CodeUnauthorized.
// A key held by two live identities (which SetAdminTokenSSHKeys refuses,
// but replicas racing could write) authenticates as neither.
func (r *Registry) AuthenticateSSHKey(ctx context.Context, wire []byte) (SSHIdentity, error) {
	pub, err := ssh.ParsePublicKey(wire)
	if err != nil {
		return SSHIdentity{}, errSSHUnauthorized
	}
	fp := ssh.FingerprintSHA256(pub)
	all, err := r.store.AdminTokenList(ctx)
	if err != nil {
		return SSHIdentity{}, err
	}
	var found *AdminToken
	now := r.Now()
	for i := range all {
		t := &all[i]
		if t.RevokedAt.IsZero() && t.HasSSHKey(fp) {
			if found != nil {
				return SSHIdentity{}, errSSHUnauthorized
			}
			found = t
		}
	}
	if found == nil || found.State(now) != AdminTokenActive {
		return SSHIdentity{}, errSSHUnauthorized
	}
	return SSHIdentity{Actor: found.sshActor(), TokenID: found.ID, Fingerprint: fp}, nil
}

func (t *AdminToken) sshActor() Actor {
	return Actor{Kind: ActorSSH, Name: t.Name, Role: t.Role, Org: t.Org}
}

// checkSSHIdentity is AuthenticateSSHKey again for an open session: the
// same token, still live, still holding the key.
func (r *Registry) checkSSHIdentity(ctx context.Context, id SSHIdentity) error {
	var t *AdminToken
	var err error
	if r.hub.start() == nil {
		t, err = r.cache.adminToken(ctx, r.store, id.TokenID)
	} else {
		t, err = r.store.AdminTokenGet(ctx, id.TokenID)
	}
	if ErrorCode(err) == CodeNotFound {
		return errSSHUnauthorized
	}
	if err != nil {
		return err
	}
	if t.State(r.Now()) != AdminTokenActive || !t.HasSSHKey(id.Fingerprint) || t.Role != id.Actor.Role || t.Org != id.Actor.Org {
		return errSSHUnauthorized
	}
	return nil
}

// WhileSSHIdentityWorks returns a context for an SSH console session that
// ends once its identity no longer authenticates: revoked, expired, or the
// key taken from it (by this process or another sharing the store). Its
// cause (context.Cause) is then a CodeUnauthorized error. As
// WhileAdminTokenWorks: a change the feed delivers is noticed at once,
// expiry within adminRecheckInterval; a store that fails to answer ends
// nothing.
func (r *Registry) WhileSSHIdentityWorks(ctx context.Context, id SSHIdentity) (context.Context, context.CancelFunc) {
	return r.whileWorks(ctx, func(ctx context.Context) error { return r.checkSSHIdentity(ctx, id) })
}

// whileWorks ends ctx once check answers CodeUnauthorized, checking at
// every admin token change the feed delivers and every
// adminRecheckInterval.
func (r *Registry) whileWorks(ctx context.Context, check func(context.Context) error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(adminRecheckInterval)
		defer tick.Stop()
		for {
			// The channel is taken before the check, so that a revocation
			// dispatched between the two still wakes us.
			changed, ok := r.hub.adminTokensChanged()
			if !ok {
				changed = nil // no feed (closed registry): the ticker alone
			}
			if err := check(ctx); ErrorCode(err) == CodeUnauthorized {
				cancel(err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-tick.C:
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}
