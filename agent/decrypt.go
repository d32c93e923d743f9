package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/internal/jwe"
)

// EventPayloadDecryptionFailed is the Audit event key of a job whose
// encrypted payload does not decrypt with the agent's key.
const EventPayloadDecryptionFailed = "JobPayloadDecryptionFailed"

// encryptionKeyFile holds the agent's encryption key pair (a private JWK) in
// its state directory, mode 0600. Its public half is sent at register.
const encryptionKeyFile = "encryption-key.json"

// LoadOrCreateEncryptionKey returns the agent's encryption key pair from
// dir, generating an X25519 one (and the directory, mode 0700) the first
// time. A key file others may read is refused rather than used.
func LoadOrCreateEncryptionKey(dir string) (*jwe.PrivateKey, error) {
	path := filepath.Join(dir, encryptionKeyFile)
	info, err := os.Stat(path)
	switch {
	case err == nil:
		if info.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("encryption key file %s is readable by other users (mode %04o); run: chmod 600 %s", path, info.Mode().Perm(), path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		k, err := jwe.ParsePrivateJWK(b)
		if err != nil {
			return nil, fmt.Errorf("%s is not an agent encryption key: %w", path, err)
		}
		return k, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	k, err := jwe.GenerateX25519()
	if err != nil {
		return nil, err
	}
	b, err := k.MarshalPrivateJWK()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	if err := writeFileAtomic(path, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("write encryption key %s: %w", path, err)
	}
	return k, nil
}

// decryptPayload replaces an encrypted job's encryptedPayload with its
// plaintext payload. It returns why the job must not run when the payload
// does not decrypt; the reason names the job and the cause, never a byte of
// the plaintext.
func (a *Agent) decryptPayload(j *apiclient.Job) (why string) {
	if j.EncryptedPayload == "" {
		return ""
	}
	if a.encKey == nil {
		return "job " + j.ID + " carries an encrypted payload and this agent has no encryption key; it was not run"
	}
	plain, err := a.encKey.Decrypt(j.EncryptedPayload)
	if err != nil {
		return fmt.Sprintf("job %s's encrypted payload does not decrypt with this agent's key (%v); it was not run", j.ID, err)
	}
	j.Payload, j.EncryptedPayload = plain, ""
	return ""
}
