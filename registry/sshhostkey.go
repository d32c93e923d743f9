package registry

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHHostKeyStore is the part of Store that keeps the console's SSH host
// key: one Ed25519 key for the whole deployment, so that every replica
// presents the same key and a client's pin holds whichever it reaches.
type SSHHostKeyStore interface {
	// SSHHostKeyEnsure stores k unless a host key is already stored, and
	// returns the stored one (of concurrent first starts, one key wins).
	SSHHostKeyEnsure(ctx context.Context, k SSHHostKey) (*SSHHostKey, error)
	// SSHHostKeyGet returns the stored host key; CodeNotFound if none.
	SSHHostKeyGet(ctx context.Context) (*SSHHostKey, error)
}

// SSHHostKey is the console's SSH host key: its public half, and its
// private half (the Ed25519 seed) sealed by the Keyring and bound to its id.
type SSHHostKey struct {
	ID            string    `json:"id"`
	PublicKey     []byte    `json:"-"` // ed25519.PublicKey
	SealedPrivate []byte    `json:"-"`
	CreatedAt     time.Time `json:"createdAt"`
}

func newSSHHostKeyID() string { return "hk-" + newULID() }

// SSHHostSigner returns the console's SSH host key, generating and storing
// it (sealed) on first use. It needs the key file that seals the other
// secrets.
func (r *Registry) SSHHostSigner(ctx context.Context) (ssh.Signer, error) {
	k, err := r.store.SSHHostKeyGet(ctx)
	if ErrorCode(err) == CodeNotFound {
		k, err = r.createSSHHostKey(ctx)
	}
	if err != nil {
		return nil, err
	}
	return r.openSSHHostKey(k)
}

func (r *Registry) createSSHHostKey(ctx context.Context) (*SSHHostKey, error) {
	if r.cfg.Keyring == nil {
		return nil, Errorf(CodeUnavailable, "this tether has no key file, so it cannot keep the SSH host key sealed: start it with --key-file, or bring a host key with --ssh-host-key-file")
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	id := newSSHHostKeyID()
	sealed, err := r.cfg.Keyring.Seal(priv.Seed(), []byte(id))
	if err != nil {
		return nil, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	return r.store.SSHHostKeyEnsure(ctx, SSHHostKey{ID: id, PublicKey: pub, SealedPrivate: sealed, CreatedAt: r.Now()})
}

func (r *Registry) openSSHHostKey(k *SSHHostKey) (ssh.Signer, error) {
	if r.cfg.Keyring == nil {
		return nil, Errorf(CodeUnavailable, "this tether has no key file, so it cannot open the SSH host key %s: start it with --key-file, or bring a host key with --ssh-host-key-file", k.ID)
	}
	seed, err := r.cfg.Keyring.Open(k.SealedPrivate, []byte(k.ID))
	if err != nil {
		return nil, err
	}
	if len(seed) != ed25519.SeedSize {
		return nil, Errorf(CodeInternal, "SSH host key %s is damaged", k.ID)
	}
	return ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(seed))
}

// SSHHostKeyFingerprint returns the stored host key's public half and its
// SHA-256 fingerprint, for people to pin; CodeNotFound before the first
// start with --ssh-listen. Reading it needs no key file.
func (r *Registry) SSHHostKeyFingerprint(ctx context.Context) (ssh.PublicKey, string, error) {
	if err := authorize(ctx, PermRead); err != nil {
		return nil, "", err
	}
	k, err := r.store.SSHHostKeyGet(ctx)
	if ErrorCode(err) == CodeNotFound {
		return nil, "", Errorf(CodeNotFound, "no SSH host key yet: tether serve --ssh-listen ADDR generates it on its first start")
	}
	if err != nil {
		return nil, "", err
	}
	pub, err := ssh.NewPublicKey(ed25519.PublicKey(k.PublicKey))
	if err != nil {
		return nil, "", Errorf(CodeInternal, "SSH host key %s is damaged", k.ID)
	}
	return pub, ssh.FingerprintSHA256(pub), nil
}
