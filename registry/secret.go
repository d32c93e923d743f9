package registry

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"log/slog"
	"strings"

	"github.com/oklog/ulid/v2"
)

// Secret holds a token or key. It never prints: fmt (every verb), slog and
// encoding/json all see "[REDACTED]". The one place that needs the value calls
// Reveal, which makes every disclosure easy to find.
type Secret string

const redacted = "[REDACTED]"

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (Secret) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(redacted)) }

func hashSecret(v string) []byte {
	h := sha256.Sum256([]byte(v))
	return h[:]
}

// equalHash compares two hashes in constant time.
func equalHash(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }

// Record ids are a short type prefix and a lowercase ULID: sortable by
// creation, and valid as Kubernetes names and label values (the public operator
// names its Cluster resource after the cluster id).
func newULID() string         { return strings.ToLower(ulid.Make().String()) }
func newClusterID() string    { return "cl-" + newULID() }
func newJobID() string        { return "j-" + newULID() }
func newTokenID() string      { return "rt-" + newULID() }
func newCredentialID() string { return "cr-" + newULID() }

// newClaimID returns a fencing token: it changes with every claim, so a holder
// whose claim was reclaimed or requeued can be told apart from the current one.
func newClaimID() string { return "fc-" + randomString(20) }

// Bearer secrets are "<prefix><ulid>_<random>": a recognizable prefix (so a
// leaked token is easy to spot and to scan for), the record's public id (so the
// server finds the row without comparing secrets), and 160 random bits. Only a
// SHA-256 hash of the whole string is stored; with this much entropy a slow
// hash adds nothing.
const (
	registrationTokenPrefix = "tether_reg_"
	credentialTokenPrefix   = "tether_cred_"
	secretChars             = 32 // base32 characters: 160 bits
)

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func randomString(chars int) string {
	buf := make([]byte, (chars*5+7)/8)
	if _, err := rand.Read(buf); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never returns an error on supported platforms
	}
	return b32.EncodeToString(buf)[:chars]
}

func randomBytes(n int) []byte {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return buf
}

// newBearer returns a fresh secret for the record id ("rt-..." or "cr-...").
func newBearer(prefix, id string) Secret {
	_, u, _ := strings.Cut(id, "-")
	return Secret(prefix + u + "_" + randomString(secretChars))
}

// parseBearer returns the record id a bearer secret names, or ok=false when the
// string is not shaped like one of ours.
func parseBearer(prefix, idPrefix, token string) (id string, ok bool) {
	rest, found := strings.CutPrefix(token, prefix)
	if !found {
		return "", false
	}
	u, secret, found := strings.Cut(rest, "_")
	if !found || len(u) != ulid.EncodedSize || len(secret) != secretChars {
		return "", false
	}
	return idPrefix + u, true
}

// RegistrationTokenID returns the id (rt-...) a registration token's secret
// names, or s unchanged when it is not such a secret: what a client puts in
// a path instead of the secret.
func RegistrationTokenID(s string) string {
	if id, ok := parseBearer(registrationTokenPrefix, "rt-", strings.TrimSpace(s)); ok {
		return id
	}
	return s
}

// LooksLikeSecret reports whether s is shaped like a tether bearer secret. The
// server's log redaction uses it as a last line of defence.
func LooksLikeSecret(s string) bool {
	return strings.Contains(s, registrationTokenPrefix) || strings.Contains(s, credentialTokenPrefix) || strings.Contains(s, adminTokenPrefix)
}
