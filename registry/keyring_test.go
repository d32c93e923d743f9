package registry

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key file of the first format (one line) is a ring of one; values sealed
// before key rings (which name no key) still open after a rotation; values
// sealed since name their key; another process over the same file sees a
// rotation at once when a value names a key it has not loaded; retire drops
// what nothing uses and refuses what something does; staging adds a key
// that opens but does not seal until rotate promotes it.
func TestKeyRing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tether.key")
	if err := CreateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), keyFileHeader) {
		t.Fatalf("a new key file is not of the first format: %q", b)
	}
	// A value sealed the way tether did before key rings.
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(strings.TrimPrefix(string(b), keyFileHeader)))
	block, _ := aes.NewCipher(raw)
	gcm, _ := cipher.NewGCM(block)
	nonce := randomBytes(gcm.NonceSize())
	legacy := gcm.Seal(append([]byte{sealedVersion1}, nonce...), nonce, []byte("legacy"), []byte("row-1"))

	kf := NewKeyFile(path)
	other := ExistingKeyFile(path) // another process
	first, err := kf.PrimaryKeyID()
	if err != nil || first != keyIDOf(raw) {
		t.Fatalf("primary %q, %v; want %s", first, err, keyIDOf(raw))
	}
	v1, err := kf.Seal([]byte("one"), []byte("row-2"))
	if err != nil || kf.SealedKeyID(v1) != first {
		t.Fatalf("sealed under %q (%v), want %s", kf.SealedKeyID(v1), err, first)
	}
	if _, err := other.Open(v1, []byte("row-2")); err != nil {
		t.Fatal(err)
	}

	// Stage, then rotate: the staged key becomes the primary.
	staged, err := kf.Rotate(true)
	if err != nil || staged.Role != KeyStaged {
		t.Fatalf("stage: %+v, %v", staged, err)
	}
	if _, err := kf.Rotate(true); ErrorCode(err) != CodeConflict {
		t.Fatalf("staging twice: %v, want a conflict", err)
	}
	if id, _ := kf.PrimaryKeyID(); id != first {
		t.Fatal("staging changed the primary")
	}
	second, err := kf.Rotate(false)
	if err != nil || second.ID != staged.ID || second.Role != KeyPrimary {
		t.Fatalf("rotate after stage: %+v, %v; want %s promoted", second, err, staged.ID)
	}
	v2, _ := kf.Seal([]byte("two"), []byte("row-3"))
	if kf.SealedKeyID(v2) != second.ID {
		t.Fatalf("after rotation sealed under %s", kf.SealedKeyID(v2))
	}
	// The other process has not looked at the file yet: the new key id
	// makes it look at once.
	for _, c := range []struct {
		sealed []byte
		aad    string
		want   string
	}{{legacy, "row-1", "legacy"}, {v1, "row-2", "one"}, {v2, "row-3", "two"}} {
		pt, err := other.Open(c.sealed, []byte(c.aad))
		if err != nil || string(pt) != c.want {
			t.Fatalf("open %s after rotation: %q, %v", c.want, pt, err)
		}
	}
	// A value bound to another row does not open.
	if _, err := kf.Open(v2, []byte("row-1")); err == nil {
		t.Fatal("a value opened for another row")
	}

	if _, err := kf.Retire(map[string]int{first: 1}); ErrorCode(err) != CodeConflict || !strings.Contains(err.Error(), first) {
		t.Fatalf("retire of a key in use: %v", err)
	}
	removed, err := kf.Retire(map[string]int{second.ID: 3})
	if err != nil || len(removed) != 1 || removed[0] != first {
		t.Fatalf("retire: %v, %v", removed, err)
	}
	if _, err := kf.Open(v1, []byte("row-2")); err == nil || !strings.Contains(err.Error(), first) {
		t.Fatalf("a value of the retired key: %v, want an error naming the key", err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", fi.Mode().Perm())
	}
}

// A key file that is not one, or a missing one next to sealed secrets, is
// a clear error.
func TestKeyFileErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"garbage":    "hello\n",
		"two":        "tether-key-v2 primary kx AAAA\n",
		"no primary": "tether-key-v2 old " + keyIDOf(make([]byte, 32)) + " " + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n",
		"bad id":     "tether-key-v2 primary k000000000000 " + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := NewKeyFile(p).Seal([]byte("x"), nil)
		if err == nil || !strings.Contains(err.Error(), "is not a tether key file") {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := ExistingKeyFile(filepath.Join(dir, "gone")).Open([]byte{2}, nil)
	if err == nil || !strings.Contains(err.Error(), "is missing") || !strings.Contains(err.Error(), "restore it") {
		t.Errorf("missing key file: %v", err)
	}
	loose := filepath.Join(dir, "loose")
	if err := CreateKeyFile(loose); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(loose, 0o644)
	if _, err := NewKeyFile(loose).Seal([]byte("x"), nil); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key file others can read: %v", err)
	}
}

// A key file missing beside a registry asks whether sealed secrets exist
// only when a key is first needed (not when the registry opens), refuses to
// make a new key if they do, and makes one if they do not.
func TestKeyFileUnlessSealed(t *testing.T) {
	dir := t.TempDir()
	asked := 0
	sealed := func(answer bool) func() (bool, error) {
		return func() (bool, error) { asked++; return answer, nil }
	}
	gone := filepath.Join(dir, "gone")
	k := NewKeyFileUnlessSealed(gone, sealed(true))
	if asked != 0 {
		t.Fatalf("asked %d times before a key was needed", asked)
	}
	if _, err := k.Seal([]byte("x"), nil); err == nil || !strings.Contains(err.Error(), "restore it") {
		t.Errorf("sealed secrets exist, key file missing: %v", err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("a key file was made beside sealed secrets: %v", err)
	}
	asked = 0
	fresh := filepath.Join(dir, "fresh")
	k = NewKeyFileUnlessSealed(fresh, sealed(false))
	box, err := k.Seal([]byte("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.Open(box, nil); err != nil || string(got) != "x" {
		t.Fatalf("open: %q %v", got, err)
	}
	if asked != 1 {
		t.Errorf("asked %d times, want once", asked)
	}
	asked = 0
	if _, err := NewKeyFileUnlessSealed(fresh, sealed(true)).Seal([]byte("x"), nil); err != nil || asked != 0 {
		t.Errorf("a key file that exists: %v, asked %d times", err, asked)
	}
}
