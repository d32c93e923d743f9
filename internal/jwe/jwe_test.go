package jwe

import (
	"crypto"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	jwxjwe "github.com/lestrrat-go/jwx/v3/jwe"
	jwxjwk "github.com/lestrrat-go/jwx/v3/jwk"
)

func keys(t *testing.T) map[string]*PrivateKey {
	t.Helper()
	x, err := GenerateX25519()
	if err != nil {
		t.Fatal(err)
	}
	p, err := GenerateP256()
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*PrivateKey{"X25519": x, "P-256": p}
}

func raw(p *PrivateKey) any {
	if p.ec != nil {
		return p.ec
	}
	return p.okp
}

// An independent implementation (lestrrat-go/jwx) decrypts what tether
// encrypts, and tether decrypts what it encrypts, for both key types; the
// header names the algorithms and the key's thumbprint.
func TestEncryptDecryptIndependently(t *testing.T) {
	payload := []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"apps"},"data":{"pw":"aHVudGVyMg=="}}`)
	for name, priv := range keys(t) {
		t.Run(name, func(t *testing.T) {
			compact, err := priv.Public().Encrypt(payload)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(compact, "hunter") || strings.Contains(compact, "Secret") {
				t.Fatal("the plaintext shows through")
			}
			msg, err := jwxjwe.Parse([]byte(compact))
			if err != nil {
				t.Fatalf("jwx cannot parse it: %v", err)
			}
			h := msg.ProtectedHeaders()
			if alg, _ := h.Algorithm(); alg.String() != Alg {
				t.Errorf("alg %v, want %s", alg, Alg)
			}
			if enc, _ := h.ContentEncryption(); enc.String() != Enc {
				t.Errorf("enc %v, want %s", enc, Enc)
			}
			if kid, _ := h.KeyID(); kid != priv.Public().Thumbprint() {
				t.Errorf("kid %q, want the thumbprint %q", kid, priv.Public().Thumbprint())
			}
			got, err := jwxjwe.Decrypt([]byte(compact), jwxjwe.WithKey(jwa.ECDH_ES_A256KW(), raw(priv)))
			if err != nil {
				t.Fatalf("jwx does not decrypt it: %v", err)
			}
			if string(got) != string(payload) {
				t.Fatalf("jwx decrypted %s, want %s", got, payload)
			}
			got, err = priv.Decrypt(compact)
			if err != nil || string(got) != string(payload) {
				t.Fatalf("Decrypt = %s, %v", got, err)
			}
			// And the other way: what jwx encrypts, tether decrypts.
			pubJWK, err := jwxjwk.Import(raw(priv))
			if err != nil {
				t.Fatal(err)
			}
			pub, err := pubJWK.PublicKey()
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := jwxjwe.Encrypt(payload, jwxjwe.WithKey(jwa.ECDH_ES_A256KW(), pub), jwxjwe.WithContentEncryption(jwa.A256GCM()), jwxjwe.WithCompact())
			if err != nil {
				t.Fatal(err)
			}
			if got, err = priv.Decrypt(string(theirs)); err != nil || string(got) != string(payload) {
				t.Fatalf("Decrypt(jwx's) = %s, %v", got, err)
			}
		})
	}
}

// The thumbprint is RFC 7638's: the RFC's own example is an RSA key, so
// this checks against jwx's thumbprint of the same keys.
func TestThumbprintMatchesJWX(t *testing.T) {
	for name, priv := range keys(t) {
		k, err := jwxjwk.ParseKey([]byte(priv.Public().JWK()))
		if err != nil {
			t.Fatalf("%s: jwx cannot read the JWK %s: %v", name, priv.Public().JWK(), err)
		}
		tp, err := k.Thumbprint(cryptoSHA256)
		if err != nil {
			t.Fatal(err)
		}
		if got := b64.EncodeToString(tp); got != priv.Public().Thumbprint() {
			t.Errorf("%s: thumbprint %s, jwx says %s", name, priv.Public().Thumbprint(), got)
		}
	}
}

func TestTamperedAndForeignPayloadsRefused(t *testing.T) {
	for name, priv := range keys(t) {
		compact, err := priv.Public().Encrypt([]byte(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(compact, ".")
		ct := []byte(parts[3])
		if ct[0] == 'A' {
			ct[0] = 'B'
		} else {
			ct[0] = 'A'
		}
		parts[3] = string(ct)
		if _, err := priv.Decrypt(strings.Join(parts, ".")); err == nil {
			t.Errorf("%s: a tampered ciphertext decrypted", name)
		}
		other := keys(t)[name]
		if _, err := other.Decrypt(compact); err == nil || !strings.Contains(err.Error(), "encrypted to key") {
			t.Errorf("%s: another key's payload: %v", name, err)
		}
	}
}

func TestParsePublicKeyRefusals(t *testing.T) {
	x, _ := GenerateX25519()
	priv, _ := x.MarshalPrivateJWK()
	for _, tc := range []struct{ in, want string }{
		{string(priv), `"d"`},
		{`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`, "Ed25519 signing key"},
		{`{"kty":"EC","crv":"P-384","x":"a","y":"b"}`, "not supported"},
		{`{"kty":"OKP","crv":"X25519","x":"short"}`, "32-byte"},
		// Points of small order (RFC 7748 §6.1): 0, 1, and one of order 8.
		{`{"kty":"OKP","crv":"X25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, "small order"},
		{`{"kty":"OKP","crv":"X25519","x":"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, "small order"},
		{`{"kty":"OKP","crv":"X25519","x":"4Ot6fDtBuK4WVuP68Z_EatoJjeucMrH9hmIFFl9JuAA"}`, "small order"},
		{`{"kty":"EC","crv":"P-256","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","y":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, "not on the P-256 curve"},
		{`"a string"`, "must be a JWK"},
		{"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VuBCIEIA==\n-----END PRIVATE KEY-----\n", "private key"},
	} {
		_, err := ParsePublicKey([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParsePublicKey(%.40s) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
	// A stored JWK reads back as the same key.
	k, err := ParsePublicKey([]byte(x.Public().JWK()))
	if err != nil || k.Thumbprint() != x.Public().Thumbprint() {
		t.Fatalf("round trip: %v", err)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(x.Public().JWK()), &m)
	if _, ok := m["d"]; ok {
		t.Fatal("the public JWK holds d")
	}
	back, err := ParsePrivateJWK(priv)
	if err != nil || back.Public().Thumbprint() != x.Public().Thumbprint() {
		t.Fatalf("private round trip: %v", err)
	}
}

const cryptoSHA256 = crypto.SHA256
