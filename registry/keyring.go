package registry

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Keyring seals secrets that tether must be able to read back (HMAC keys), so
// that the database never holds them in plain text. aad binds a sealed value to
// its record: a ciphertext copied onto another row does not open.
type Keyring interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

const (
	keyFileHeader  = "tether-key-v1:"
	sealedVersion1 = 1
)

// KeyFile is a Keyring whose 256-bit AES-GCM key lives in a file (mode 0600).
// The file is created on first use, so a registry that never issues an HMAC
// credential never writes one. Several processes may race to create it: the
// key is written to a temporary file and hard-linked into place, so exactly one
// key wins and nobody reads a half-written file.
type KeyFile struct {
	path string
	// mustExist: never create the key (secrets sealed with a key that is
	// missing exist; a new key would not open them, and would seal new
	// secrets that the missing key's return could not open either).
	mustExist bool

	once sync.Once
	aead cipher.AEAD
	err  error
}

// NewKeyFile returns a keyring over the key file at path, created with a new
// random key on first use if it does not exist.
func NewKeyFile(path string) *KeyFile { return &KeyFile{path: path} }

// ExistingKeyFile returns a keyring over the key file at path that never
// creates it: use it when secrets sealed with some key already exist.
func ExistingKeyFile(path string) *KeyFile { return &KeyFile{path: path, mustExist: true} }

// CreateKeyFile writes a new key file at path; it refuses to replace one.
func CreateKeyFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return Errorf(CodeConflict, "the key file %s already exists; tether never replaces a key file (the secrets sealed with it would be lost)", path)
	}
	_, err := loadOrCreateKey(path)
	return err
}

// KeyFilePath is where the key of the database at dbPath lives: next to it.
func KeyFilePath(dbPath string) string { return dbPath + ".key" }

// Path is the key file's location.
func (k *KeyFile) Path() string { return k.path }

func (k *KeyFile) load() (cipher.AEAD, error) {
	k.once.Do(func() {
		if k.mustExist {
			if _, err := os.Stat(k.path); errors.Is(err, fs.ErrNotExist) {
				k.err = Errorf(CodeUnavailable, "the key file %s is missing, and the database holds secrets sealed with it (agents' HMAC keys, webhook secrets): "+
					"restore it from your backup; tether will not make a new key that cannot open them", k.path)
				return
			}
		}
		key, err := loadOrCreateKey(k.path)
		if err != nil {
			k.err = err
			return
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			k.err = err
			return
		}
		k.aead, k.err = cipher.NewGCM(block)
	})
	return k.aead, k.err
}

func (k *KeyFile) Seal(plaintext, aad []byte) ([]byte, error) {
	aead, err := k.load()
	if err != nil {
		return nil, err
	}
	nonce := randomBytes(aead.NonceSize())
	out := append([]byte{sealedVersion1}, nonce...)
	return aead.Seal(out, nonce, plaintext, aad), nil
}

func (k *KeyFile) Open(sealed, aad []byte) ([]byte, error) {
	aead, err := k.load()
	if err != nil {
		return nil, err
	}
	if len(sealed) < 1+aead.NonceSize() || sealed[0] != sealedVersion1 {
		return nil, Errorf(CodeInternal, "sealed secret has an unknown format")
	}
	nonce, ct := sealed[1:1+aead.NonceSize()], sealed[1+aead.NonceSize():]
	pt, err := aead.Open(nil, nonce, ct, aad)
	if err != nil {
		return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot decrypt a stored secret with the key in %s (was the key file replaced?)", k.path), Err: err}
	}
	return pt, nil
}

func loadOrCreateKey(path string) ([]byte, error) {
	key, err := readKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tether-key-*")
	if err != nil {
		return nil, fmt.Errorf("create key file next to %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	key = randomBytes(32)
	_, werr := tmp.WriteString(keyFileHeader + base64.StdEncoding.EncodeToString(key) + "\n")
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("write key file %s: %w", path, werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readKey(path) // another process won the race
		}
		return nil, fmt.Errorf("install key file %s: %w", path, err)
	}
	return key, nil
}

func readKey(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key file %s is readable by other users (mode %04o); run: chmod 600 %s", path, info.Mode().Perm(), path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	enc, ok := strings.CutPrefix(strings.TrimSpace(string(raw)), keyFileHeader)
	key, derr := base64.StdEncoding.DecodeString(enc)
	if !ok || derr != nil || len(key) != 32 {
		return nil, fmt.Errorf("key file %s is not a tether key file (expected a %q line)", path, keyFileHeader)
	}
	return key, nil
}
