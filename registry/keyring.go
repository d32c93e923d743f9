package registry

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Keyring seals secrets that tether must be able to read back (HMAC keys), so
// that the database never holds them in plain text. aad binds a sealed value to
// its record: a ciphertext copied onto another row does not open.
type Keyring interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

// RotatingKeyring is a Keyring whose sealed values name the key that sealed
// them, so that they can be re-sealed under a new key (tether keys rotate).
type RotatingKeyring interface {
	Keyring
	// PrimaryKeyID is the id of the key Seal uses.
	PrimaryKeyID() (string, error)
	// SealedKeyID is the id of the key that sealed a value; "" for a value
	// of the first format, which names none (sealed before key rings).
	SealedKeyID(sealed []byte) string
}

// The key file. A key ring: one key seals (primary), every key opens.
//
//	tether-key-v2 primary k3f2a9c01be74 <32 bytes, standard base64>
//	tether-key-v2 staged  k9d0e11aa2f05 <...>   (tether keys rotate --stage: opens; sealing with it comes next)
//	tether-key-v2 old     k51c2b8e4d9a0 <...>   (opens values not yet re-sealed; tether keys retire drops it)
//
// The first format, one line "tether-key-v1:<base64>", is a ring of one
// primary key and is still read. A key's id is "k" and the first 12 hex
// digits of its SHA-256, so an id in the file that does not match its key
// is caught.
const (
	keyFileHeader  = "tether-key-v1:"
	keyLinePrefix  = "tether-key-v2"
	sealedVersion1 = 1 // 1, nonce, ciphertext: the key is not named
	sealedVersion2 = 2 // 2, key id (13 bytes), nonce, ciphertext
	keyIDLen       = 13

	KeyPrimary = "primary"
	KeyStaged  = "staged"
	KeyOld     = "old"

	// keyFileCheck is how often a KeyFile looks whether its file changed
	// (another process rotated the ring); an unknown key id looks at once.
	keyFileCheck = 2 * time.Second
)

// RingKey is one key of the ring, as tether keys shows it.
type RingKey struct {
	ID   string `json:"id"`
	Role string `json:"role"` // primary, staged or old
}

type ringKey struct {
	RingKey
	raw  []byte
	aead cipher.AEAD
}

type keyRing struct {
	keys    []ringKey
	primary *ringKey
}

func keyIDOf(key []byte) string {
	sum := sha256.Sum256(key)
	return "k" + hex.EncodeToString(sum[:])[:keyIDLen-1]
}

func newRingKey(raw []byte, role string) (ringKey, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return ringKey{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return ringKey{}, err
	}
	return ringKey{RingKey: RingKey{ID: keyIDOf(raw), Role: role}, raw: raw, aead: aead}, nil
}

func (r *keyRing) find(id string) *ringKey {
	for i := range r.keys {
		if r.keys[i].ID == id {
			return &r.keys[i]
		}
	}
	return nil
}

// KeyFile is a Keyring whose 256-bit AES-GCM keys live in a file (mode 0600).
// The file is created on first use, so a registry that never issues an HMAC
// credential never writes one. Several processes may race to create it: the
// key is written to a temporary file and hard-linked into place, so exactly one
// key wins and nobody reads a half-written file.
//
// It reads the file again when it changes (looked at every couple of
// seconds, at once when a value names a key it does not hold, or on Reload):
// a ring rotated by another process (tether keys rotate) is used without a
// restart.
type KeyFile struct {
	path string
	// mustExist: never create the key (secrets sealed with a key that is
	// missing exist; a new key would not open them, and would seal new
	// secrets that the missing key's return could not open either).
	mustExist bool
	// sealedExist, when set, is asked whether such secrets exist the first
	// time the file is needed and missing (NewKeyFileUnlessSealed).
	sealedExist func() (bool, error)

	mu      sync.Mutex
	ring    *keyRing
	stamp   string
	checked time.Time
}

// NewKeyFile returns a keyring over the key file at path, created with a new
// random key on first use if it does not exist.
func NewKeyFile(path string) *KeyFile { return &KeyFile{path: path} }

// ExistingKeyFile returns a keyring over the key file at path that never
// creates it: use it when secrets sealed with some key already exist.
func ExistingKeyFile(path string) *KeyFile { return &KeyFile{path: path, mustExist: true} }

// NewKeyFileUnlessSealed returns a keyring over the key file at path that
// creates it on first use, as NewKeyFile does, unless sealedExist then says
// that secrets sealed with some key exist: it behaves as ExistingKeyFile
// from that moment. The question is asked only when a key is needed and the
// file is missing, so a command that seals and opens nothing never pays for
// it (over a large database the look at the jobs' payloads reads them all).
func NewKeyFileUnlessSealed(path string, sealedExist func() (bool, error)) *KeyFile {
	return &KeyFile{path: path, sealedExist: sealedExist}
}

// CreateKeyFile writes a new key file at path; it refuses to replace one.
func CreateKeyFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return Errorf(CodeConflict, "the key file %s already exists; tether never replaces a key file (the secrets sealed with it would be lost); to change the key, run tether keys rotate", path)
	}
	_, err := loadOrCreateKey(path)
	return keyFileErr(err)
}

// keyFileErr turns a failure to read or write the key file (unreadable, of
// the wrong mode, malformed, a directory that cannot be written) into an
// internal error that keeps its message: the CLI shows it to the admin
// (ErrorMessage), the server keeps it to its log. As a plain error it read
// "internal error" and nothing more.
func keyFileErr(err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, "key file") {
		msg = "key file: " + msg
	}
	return &Error{Code: CodeInternal, Message: msg}
}

// KeyFilePath is where the key of the database at dbPath lives: next to it.
func KeyFilePath(dbPath string) string { return dbPath + ".key" }

// Path is the key file's location.
func (k *KeyFile) Path() string { return k.path }

func fileStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	return fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano())
}

// load returns the ring, reading the file again if force or if it is time
// to look and it changed. A file that changed into something unreadable
// keeps the previous ring (rotate writes atomically, so that is an
// operator's mistake, said at the next start).
func (k *KeyFile) load(force bool) (*keyRing, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	if k.ring != nil && !force && now.Sub(k.checked) < keyFileCheck {
		return k.ring, nil
	}
	k.checked = now
	stamp := fileStamp(k.path)
	if k.ring != nil && stamp == k.stamp {
		return k.ring, nil
	}
	if k.ring == nil {
		if !k.mustExist && stamp == "missing" && k.sealedExist != nil {
			sealed, err := k.sealedExist()
			if err != nil {
				return nil, err
			}
			k.mustExist = sealed
		}
		if k.mustExist && stamp == "missing" {
			return nil, Errorf(CodeUnavailable, "the key file %s is missing, and the database holds secrets sealed with it (agents' HMAC keys, webhook secrets): "+
				"restore it from your backup; tether will not make a new key that cannot open them", k.path)
		}
		if _, err := loadOrCreateKey(k.path); err != nil {
			return nil, keyFileErr(err)
		}
		stamp = fileStamp(k.path)
	}
	ring, err := readRing(k.path)
	if err != nil {
		if k.ring != nil {
			return k.ring, nil
		}
		return nil, keyFileErr(err)
	}
	k.ring, k.stamp = ring, stamp
	return ring, nil
}

// Reload reads the key file now (serve calls it on SIGHUP).
func (k *KeyFile) Reload() error {
	_, err := k.load(true)
	return err
}

func (k *KeyFile) Seal(plaintext, aad []byte) ([]byte, error) {
	ring, err := k.load(false)
	if err != nil {
		return nil, err
	}
	p := ring.primary
	nonce := randomBytes(p.aead.NonceSize())
	out := append(append([]byte{sealedVersion2}, p.ID...), nonce...)
	return p.aead.Seal(out, nonce, plaintext, aad), nil
}

func (k *KeyFile) Open(sealed, aad []byte) ([]byte, error) {
	ring, err := k.load(false)
	if err != nil {
		return nil, err
	}
	if len(sealed) == 0 {
		return nil, Errorf(CodeInternal, "sealed secret has an unknown format")
	}
	switch sealed[0] {
	case sealedVersion1:
		// Sealed before key rings: try each key, the primary first.
		order := append([]ringKey{*ring.primary}, ring.keys...)
		for _, rk := range order {
			n := rk.aead.NonceSize()
			if len(sealed) < 1+n {
				break
			}
			if pt, err := rk.aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad); err == nil {
				return pt, nil
			}
		}
		return nil, Errorf(CodeInternal, "cannot decrypt a stored secret with any key in %s (was the key file replaced, or an old key retired too early?)", k.path)
	case sealedVersion2:
		if len(sealed) < 1+keyIDLen {
			return nil, Errorf(CodeInternal, "sealed secret has an unknown format")
		}
		id := string(sealed[1 : 1+keyIDLen])
		rk := ring.find(id)
		if rk == nil {
			// Maybe another process rotated the ring a moment ago.
			if ring, err = k.load(true); err != nil {
				return nil, err
			}
			if rk = ring.find(id); rk == nil {
				return nil, Errorf(CodeInternal, "a stored secret is sealed with key %s, which the key file %s does not hold: give this process the current key file (every replica needs the same one), or restore the key if it was retired too early", id, k.path)
			}
		}
		rest := sealed[1+keyIDLen:]
		n := rk.aead.NonceSize()
		if len(rest) < n {
			return nil, Errorf(CodeInternal, "sealed secret has an unknown format")
		}
		pt, err := rk.aead.Open(nil, rest[:n], rest[n:], aad)
		if err != nil {
			return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("cannot decrypt a stored secret with key %s of %s (was the key file replaced?)", id, k.path), Err: err}
		}
		return pt, nil
	}
	return nil, Errorf(CodeInternal, "sealed secret has an unknown format")
}

func (k *KeyFile) PrimaryKeyID() (string, error) {
	ring, err := k.load(false)
	if err != nil {
		return "", err
	}
	return ring.primary.ID, nil
}

func (k *KeyFile) SealedKeyID(sealed []byte) string {
	if len(sealed) >= 1+keyIDLen && sealed[0] == sealedVersion2 {
		return string(sealed[1 : 1+keyIDLen])
	}
	return ""
}

// Keys lists the ring's keys as the file holds them now.
func (k *KeyFile) Keys() ([]RingKey, error) {
	ring, err := k.load(true)
	if err != nil {
		return nil, err
	}
	out := make([]RingKey, len(ring.keys))
	for i, rk := range ring.keys {
		out[i] = rk.RingKey
	}
	return out, nil
}

// Rotate changes the ring in the file. stage adds a new key that opens but
// does not seal yet (for several replicas: copy the file to each, then
// rotate). Otherwise the staged key, or a new one, becomes the primary and
// the previous primary stays to open what it sealed. It returns the key
// added or promoted.
func (k *KeyFile) Rotate(stage bool) (RingKey, error) {
	ring, err := k.load(true)
	if err != nil {
		return RingKey{}, err
	}
	keys := append([]ringKey(nil), ring.keys...)
	var staged *ringKey
	for i := range keys {
		if keys[i].Role == KeyStaged {
			staged = &keys[i]
		}
	}
	var changed RingKey
	switch {
	case stage && staged != nil:
		return RingKey{}, Errorf(CodeConflict, "key %s is staged already: copy the key file to every replica, then run tether keys rotate to make it the primary", staged.ID)
	case stage:
		nk, err := newRingKey(randomBytes(32), KeyStaged)
		if err != nil {
			return RingKey{}, err
		}
		keys = append(keys, nk)
		changed = nk.RingKey
	default:
		for i := range keys {
			if keys[i].Role == KeyPrimary {
				keys[i].Role = KeyOld
			}
		}
		if staged != nil {
			staged.Role = KeyPrimary
			changed = staged.RingKey
		} else {
			nk, err := newRingKey(randomBytes(32), KeyPrimary)
			if err != nil {
				return RingKey{}, err
			}
			keys = append(keys, nk)
			changed = nk.RingKey
		}
	}
	if err := k.write(keys); err != nil {
		return RingKey{}, err
	}
	return changed, nil
}

// Retire removes the old keys no stored value uses (inUse counts values per
// key id, as SealedKeyUsage returns them). It refuses while one is in use.
func (k *KeyFile) Retire(inUse map[string]int) ([]string, error) {
	ring, err := k.load(true)
	if err != nil {
		return nil, err
	}
	var keep []ringKey
	var removed, busy []string
	for _, rk := range ring.keys {
		switch {
		case rk.Role != KeyOld:
			keep = append(keep, rk)
		case inUse[rk.ID] > 0:
			keep = append(keep, rk)
			busy = append(busy, fmt.Sprintf("%s (%d values)", rk.ID, inUse[rk.ID]))
		default:
			removed = append(removed, rk.ID)
		}
	}
	if len(busy) > 0 {
		return nil, Errorf(CodeConflict, "old keys still seal stored values: %s; a replica with an older key file may still be sealing with them: give every replica the current key file, then run tether keys retire again (it re-seals first)", strings.Join(busy, ", "))
	}
	if len(removed) == 0 {
		return nil, nil
	}
	return removed, k.write(keep)
}

// write replaces the key file with the ring (atomically, mode 0600) and
// uses it from now on.
func (k *KeyFile) write(keys []ringKey) error {
	var b strings.Builder
	b.WriteString("# tether key ring (docs/security.md): the primary key seals, every key opens.\n")
	for _, rk := range keys {
		fmt.Fprintf(&b, "%s %s %s %s\n", keyLinePrefix, rk.Role, rk.ID, base64.StdEncoding.EncodeToString(rk.raw))
	}
	tmp, err := os.CreateTemp(filepath.Dir(k.path), ".tether-key-*")
	if err != nil {
		return keyFileErr(fmt.Errorf("write key file next to %s: %w", k.path, err))
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(b.String())
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), k.path)
	}
	if werr != nil {
		return keyFileErr(fmt.Errorf("write key file %s: %w", k.path, werr))
	}
	_, err = k.load(true)
	return err
}

func loadOrCreateKey(path string) ([]byte, error) {
	_, err := os.Stat(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tether-key-*")
	if err != nil {
		return nil, fmt.Errorf("create key file next to %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	key := randomBytes(32)
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
			return nil, nil // another process won the race
		}
		return nil, fmt.Errorf("install key file %s: %w", path, err)
	}
	return key, nil
}

// ErrKeyFileUnusable is wrapped by the refusal of a key file that users
// other than its owner may read, or that is not a tether key file: the
// operator's to fix (chmod 600, the right --key-file), not a fault of
// tether's.
var ErrKeyFileUnusable = errors.New("key file unusable")

// readRing reads and checks the key file.
func readRing(path string) (*keyRing, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return nil, fmt.Errorf("key file %s is a directory: point --key-file (or $TETHER_KEY_FILE) at the key file itself", path)
	}
	if info.Mode().Perm()&0o077 != 0 {
		// Internal to a request that needs the key (the server's fault as
		// its caller sees it); the CLI tells the operator (ErrKeyFileUnusable).
		return nil, &Error{Code: CodeInternal, Err: ErrKeyFileUnusable,
			Message: fmt.Sprintf("key file %s is readable by other users (mode %04o); run: chmod 600 %s", path, info.Mode().Perm(), path)}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	bad := func(line int, why string) error {
		return &Error{Code: CodeInternal, Err: ErrKeyFileUnusable,
			Message: fmt.Sprintf("key file %s is not a tether key file (line %d: %s; expected a %q line, or %q lines: ROLE ID KEY)", path, line, why, keyFileHeader, keyLinePrefix)}
	}
	ring := &keyRing{}
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var role, id, enc string
		if v1, ok := strings.CutPrefix(line, keyFileHeader); ok {
			role, enc = KeyPrimary, v1
		} else {
			f := strings.Fields(line)
			if len(f) != 4 || f[0] != keyLinePrefix {
				return nil, bad(i+1, "unknown line")
			}
			role, id, enc = f[1], f[2], f[3]
			if role != KeyPrimary && role != KeyStaged && role != KeyOld {
				return nil, bad(i+1, "role "+role+" is not primary, staged or old")
			}
		}
		key, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || len(key) != 32 {
			return nil, bad(i+1, "the key is not 32 bytes of base64")
		}
		rk, err := newRingKey(key, role)
		if err != nil {
			return nil, err
		}
		if id != "" && id != rk.ID {
			return nil, bad(i+1, "id "+id+" does not match its key")
		}
		if ring.find(rk.ID) != nil {
			return nil, bad(i+1, "key "+rk.ID+" appears twice")
		}
		ring.keys = append(ring.keys, rk)
	}
	for i := range ring.keys {
		if ring.keys[i].Role == KeyPrimary {
			if ring.primary != nil {
				return nil, bad(0, "more than one primary key")
			}
			ring.primary = &ring.keys[i]
		}
	}
	if ring.primary == nil {
		return nil, bad(0, "no primary key")
	}
	return ring, nil
}
