// Package jwe is tether's encrypted job payloads (issue 10): an agent's
// public key as a JWK (X25519 "OKP" or P-256 "EC"), its RFC 7638 thumbprint,
// and JWE compact serializations with alg ECDH-ES+A256KW and enc A256GCM.
//
// P-256 goes through go-jose, a maintained JOSE library. go-jose has no
// X25519 key agreement, so for X25519 keys this package composes the same
// steps (RFC 7518 §4.6 with RFC 8037's OKP keys) from go-jose's Concat KDF
// and AES key wrap, crypto/ecdh and crypto/aes: the only JOSE assembly here
// is the header and the five compact parts. Both key types are checked by an
// independent implementation in the tests.
package jwe

import (
	"bytes"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	josecipher "github.com/go-jose/go-jose/v4/cipher"
)

// The one algorithm pair tether uses.
const (
	Alg = "ECDH-ES+A256KW"
	Enc = "A256GCM"
)

var b64 = base64.RawURLEncoding

// jwk is a JWK's members that matter here. D is read only to refuse it in a
// public key, and to load the agent's own private key.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y,omitempty"`
	D   string `json:"d,omitempty"`
	Kid string `json:"kid,omitempty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
}

// PublicKey is an agent's encryption key.
type PublicKey struct {
	Kty, Crv, X, Y string
	ec             *ecdsa.PublicKey // P-256
	okp            *ecdh.PublicKey  // X25519
}

// ParsePublicKey reads a public key from a JWK (JSON) or a PEM
// "PUBLIC KEY" block (PKIX). The error says what is wrong with it in words
// meant for the person who sent it.
func ParsePublicKey(text []byte) (*PublicKey, error) {
	text = bytes.TrimSpace(text)
	if len(text) == 0 {
		return nil, errors.New("it is empty")
	}
	if bytes.HasPrefix(text, []byte("-----BEGIN")) {
		return parsePEM(text)
	}
	if text[0] != '{' {
		return nil, errors.New(`it must be a JWK (a JSON object such as {"kty":"OKP","crv":"X25519","x":"..."}) or a PEM PUBLIC KEY block`)
	}
	var k jwk
	if err := json.Unmarshal(text, &k); err != nil {
		return nil, fmt.Errorf("it is not a JWK: %v", err)
	}
	if k.D != "" {
		return nil, errors.New(`it holds a private key (the member "d"): send only the public half; the private key never leaves the agent`)
	}
	if k.Use != "" && k.Use != "enc" {
		return nil, fmt.Errorf(`its "use" is %q: an encryption key has use "enc" or none`, k.Use)
	}
	return fromJWK(k)
}

func fromJWK(k jwk) (*PublicKey, error) {
	switch {
	case k.Kty == "OKP" && k.Crv == "X25519":
		x, err := b64.DecodeString(k.X)
		if err != nil || len(x) != 32 {
			return nil, errors.New(`"x" must be the base64url of the 32-byte X25519 public key`)
		}
		pub, err := ecdh.X25519().NewPublicKey(x)
		if err != nil {
			return nil, fmt.Errorf(`"x" is not an X25519 public key: %v`, err)
		}
		// crypto/ecdh takes any 32 bytes, including the points of small
		// order, whose every agreement is all zeros (RFC 7748 §6.1). ECDH
		// refuses that output, so such a key would take registration and
		// then fail every job's encryption: refuse it now. Clamping makes
		// every scalar a multiple of 8 below 8 times the group order, so a
		// fixed one finds exactly these points, with one multiplication.
		if _, err := smallOrderProbe.ECDH(pub); err != nil {
			return nil, errors.New(`"x" is an X25519 point of small order (every shared secret with it is zero): generate a real key pair`)
		}
		return &PublicKey{Kty: "OKP", Crv: "X25519", X: k.X, okp: pub}, nil
	case k.Kty == "EC" && k.Crv == "P-256":
		x, errX := b64.DecodeString(k.X)
		y, errY := b64.DecodeString(k.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return nil, errors.New(`"x" and "y" must each be the base64url of a 32-byte P-256 coordinate`)
		}
		// crypto/ecdh checks that the point is on the curve.
		if _, err := ecdh.P256().NewPublicKey(append(append([]byte{4}, x...), y...)); err != nil {
			return nil, errors.New("the point (x, y) is not on the P-256 curve")
		}
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		return &PublicKey{Kty: "EC", Crv: "P-256", X: k.X, Y: k.Y, ec: pub}, nil
	case k.Kty == "OKP" && k.Crv == "Ed25519":
		return nil, errors.New("it is an Ed25519 signing key; payloads are encrypted to an X25519 (kty OKP, crv X25519) or P-256 (kty EC, crv P-256) key")
	case k.Kty == "":
		return nil, errors.New(`it has no "kty": use kty OKP with crv X25519, or kty EC with crv P-256`)
	}
	return nil, fmt.Errorf("kty %q with crv %q is not supported: use kty OKP with crv X25519, or kty EC with crv P-256", k.Kty, k.Crv)
}

// smallOrderProbe is any X25519 private key (see fromJWK); a fixed one
// saves generating a key per parse. It never encrypts anything.
var smallOrderProbe = func() *ecdh.PrivateKey {
	k, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{0x5a}, 32))
	if err != nil {
		panic(err)
	}
	return k
}()

func parsePEM(text []byte) (*PublicKey, error) {
	block, _ := pem.Decode(text)
	if block == nil {
		return nil, errors.New("it is not a PEM block")
	}
	if strings.Contains(block.Type, "PRIVATE") {
		return nil, errors.New("it is a private key (PEM " + block.Type + "): send only the public half; the private key never leaves the agent")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("PEM %q is not a PUBLIC KEY block", block.Type)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the PEM public key does not parse: %v", err)
	}
	switch p := pub.(type) {
	case *ecdh.PublicKey:
		if p.Curve() == ecdh.X25519() {
			return fromJWK(jwk{Kty: "OKP", Crv: "X25519", X: b64.EncodeToString(p.Bytes())})
		}
	case *ecdsa.PublicKey:
		if p.Curve == elliptic.P256() {
			raw, err := p.Bytes()
			if err == nil {
				return fromJWK(jwk{Kty: "EC", Crv: "P-256", X: b64.EncodeToString(raw[1:33]), Y: b64.EncodeToString(raw[33:])})
			}
		}
	}
	return nil, fmt.Errorf("the PEM key is a %T; payloads are encrypted to an X25519 or P-256 key", pub)
}

// Thumbprint is the key's RFC 7638 JWK thumbprint (SHA-256, base64url): the
// kid of every JWE encrypted to it.
func (k *PublicKey) Thumbprint() string {
	// The required members in lexicographic order, no whitespace (RFC 7638
	// §3.2); base64url values need no escaping.
	var in string
	if k.Kty == "EC" {
		in = `{"crv":"` + k.Crv + `","kty":"EC","x":"` + k.X + `","y":"` + k.Y + `"}`
	} else {
		in = `{"crv":"` + k.Crv + `","kty":"OKP","x":"` + k.X + `"}`
	}
	sum := sha256.Sum256([]byte(in))
	return b64.EncodeToString(sum[:])
}

// JWK is the key as tether stores and shows it: its public members, kid
// (the thumbprint), use "enc" and alg ECDH-ES+A256KW.
func (k *PublicKey) JWK() string {
	b, _ := json.Marshal(jwk{Kty: k.Kty, Crv: k.Crv, X: k.X, Y: k.Y, Kid: k.Thumbprint(), Use: "enc", Alg: Alg})
	return string(b)
}

// Encrypt returns plaintext as a JWE compact serialization to k (alg
// ECDH-ES+A256KW, enc A256GCM, kid the key's thumbprint).
func (k *PublicKey) Encrypt(plaintext []byte) (string, error) {
	kid := k.Thumbprint()
	if k.ec != nil {
		enc, err := jose.NewEncrypter(jose.A256GCM, jose.Recipient{Algorithm: jose.ECDH_ES_A256KW, Key: k.ec, KeyID: kid}, nil)
		if err != nil {
			return "", err
		}
		obj, err := enc.Encrypt(plaintext)
		if err != nil {
			return "", err
		}
		return obj.CompactSerialize()
	}
	eph, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	z, err := eph.ECDH(k.okp)
	if err != nil {
		return "", err
	}
	header, err := json.Marshal(map[string]any{
		"alg": Alg, "enc": Enc, "kid": kid,
		"epk": jwk{Kty: "OKP", Crv: "X25519", X: b64.EncodeToString(eph.PublicKey().Bytes())},
	})
	if err != nil {
		return "", err
	}
	cek := make([]byte, 32)
	if _, err := rand.Read(cek); err != nil {
		return "", err
	}
	kek, err := aes.NewCipher(kdf(z))
	if err != nil {
		return "", err
	}
	wrapped, err := josecipher.KeyWrap(kek, cek)
	if err != nil {
		return "", err
	}
	protected := b64.EncodeToString(header)
	gcm, err := newGCM(cek)
	if err != nil {
		return "", err
	}
	iv := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(iv); err != nil {
		return "", err
	}
	sealed := gcm.Seal(nil, iv, plaintext, []byte(protected))
	ct, tag := sealed[:len(sealed)-gcm.Overhead()], sealed[len(sealed)-gcm.Overhead():]
	return strings.Join([]string{protected, b64.EncodeToString(wrapped), b64.EncodeToString(iv), b64.EncodeToString(ct), b64.EncodeToString(tag)}, "."), nil
}

// kdf is RFC 7518 §4.6.2's Concat KDF for ECDH-ES+A256KW with empty apu and
// apv: a 256-bit key-encryption key.
func kdf(z []byte) []byte {
	prefixed := func(b []byte) []byte { return binary.BigEndian.AppendUint32(nil, uint32(len(b))) }
	algID := append(prefixed([]byte(Alg)), Alg...)
	supPub := binary.BigEndian.AppendUint32(nil, 256)
	out := make([]byte, 32)
	_, _ = josecipher.NewConcatKDF(crypto.SHA256, z, algID, prefixed(nil), prefixed(nil), supPub, nil).Read(out)
	return out
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// PrivateKey is an agent's encryption key pair.
type PrivateKey struct {
	pub *PublicKey
	ec  *ecdsa.PrivateKey
	okp *ecdh.PrivateKey
}

// GenerateX25519 returns a new X25519 key pair.
func GenerateX25519() (*PrivateKey, error) {
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	pub, err := fromJWK(jwk{Kty: "OKP", Crv: "X25519", X: b64.EncodeToString(priv.PublicKey().Bytes())})
	if err != nil {
		return nil, err
	}
	return &PrivateKey{pub: pub, okp: priv}, nil
}

// GenerateP256 returns a new P-256 key pair.
func GenerateP256() (*PrivateKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	raw, err := priv.PublicKey.Bytes()
	if err != nil {
		return nil, err
	}
	pub, err := fromJWK(jwk{Kty: "EC", Crv: "P-256", X: b64.EncodeToString(raw[1:33]), Y: b64.EncodeToString(raw[33:])})
	if err != nil {
		return nil, err
	}
	return &PrivateKey{pub: pub, ec: priv}, nil
}

// Public returns the key pair's public half.
func (p *PrivateKey) Public() *PublicKey { return p.pub }

// MarshalPrivateJWK returns the key pair as a private JWK (with "d"), for
// the agent's key file.
func (p *PrivateKey) MarshalPrivateJWK() ([]byte, error) {
	k := jwk{Kty: p.pub.Kty, Crv: p.pub.Crv, X: p.pub.X, Y: p.pub.Y, Kid: p.pub.Thumbprint(), Use: "enc", Alg: Alg}
	if p.ec != nil {
		raw, err := p.ec.Bytes()
		if err != nil {
			return nil, err
		}
		k.D = b64.EncodeToString(raw)
	} else {
		k.D = b64.EncodeToString(p.okp.Bytes())
	}
	return json.Marshal(k)
}

// ParsePrivateJWK reads a key pair written by MarshalPrivateJWK.
func ParsePrivateJWK(text []byte) (*PrivateKey, error) {
	var k jwk
	if err := json.Unmarshal(text, &k); err != nil {
		return nil, fmt.Errorf("not a JWK: %v", err)
	}
	d, err := b64.DecodeString(k.D)
	if err != nil || len(d) != 32 {
		return nil, errors.New(`"d" must be the base64url of a 32-byte private key`)
	}
	var priv *PrivateKey
	switch {
	case k.Kty == "OKP" && k.Crv == "X25519":
		okp, err := ecdh.X25519().NewPrivateKey(d)
		if err != nil {
			return nil, err
		}
		if priv, err = fromECDH(okp); err != nil {
			return nil, err
		}
	case k.Kty == "EC" && k.Crv == "P-256":
		ec, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
		if err != nil {
			return nil, err
		}
		raw, err := ec.PublicKey.Bytes()
		if err != nil {
			return nil, err
		}
		pub, err := fromJWK(jwk{Kty: "EC", Crv: "P-256", X: b64.EncodeToString(raw[1:33]), Y: b64.EncodeToString(raw[33:])})
		if err != nil {
			return nil, err
		}
		priv = &PrivateKey{pub: pub, ec: ec}
	default:
		return nil, fmt.Errorf("kty %q crv %q is not an X25519 or P-256 key", k.Kty, k.Crv)
	}
	if (k.X != "" && k.X != priv.pub.X) || (k.Y != "" && k.Y != priv.pub.Y) {
		return nil, errors.New("its public members do not match its private key")
	}
	return priv, nil
}

func fromECDH(okp *ecdh.PrivateKey) (*PrivateKey, error) {
	pub, err := fromJWK(jwk{Kty: "OKP", Crv: "X25519", X: b64.EncodeToString(okp.PublicKey().Bytes())})
	if err != nil {
		return nil, err
	}
	return &PrivateKey{pub: pub, okp: okp}, nil
}

// ErrDecrypt is the answer to a JWE that does not decrypt: tampered with,
// truncated, or encrypted to another key. Its cause says which, without a
// byte of the plaintext.
var ErrDecrypt = errors.New("the encrypted payload does not decrypt")

// Decrypt opens a JWE compact serialization encrypted to p. Anything other
// than alg ECDH-ES+A256KW with enc A256GCM is refused.
func (p *PrivateKey) Decrypt(compact string) ([]byte, error) {
	parts := strings.Split(compact, ".")
	if len(parts) != 5 {
		return nil, fmt.Errorf("%w: a JWE compact serialization has 5 parts, this one %d", ErrDecrypt, len(parts))
	}
	rawHeader, err := b64.DecodeString(parts[0])
	var h struct {
		Alg string `json:"alg"`
		Enc string `json:"enc"`
		Kid string `json:"kid"`
		Epk jwk    `json:"epk"`
	}
	if err != nil || json.Unmarshal(rawHeader, &h) != nil {
		return nil, fmt.Errorf("%w: its protected header is not base64url JSON", ErrDecrypt)
	}
	if h.Alg != Alg || h.Enc != Enc {
		return nil, fmt.Errorf("%w: alg %q enc %q; only %s with %s is accepted", ErrDecrypt, h.Alg, h.Enc, Alg, Enc)
	}
	if kid := p.pub.Thumbprint(); h.Kid != "" && h.Kid != kid {
		return nil, fmt.Errorf("%w: it is encrypted to key %q, and this agent holds key %q (was the cluster's public key changed?)", ErrDecrypt, h.Kid, kid)
	}
	if p.ec != nil {
		obj, err := jose.ParseEncryptedCompact(compact, []jose.KeyAlgorithm{jose.ECDH_ES_A256KW}, []jose.ContentEncryption{jose.A256GCM})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
		}
		pt, err := obj.Decrypt(p.ec)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
		}
		return pt, nil
	}
	if h.Epk.Kty != "OKP" || h.Epk.Crv != "X25519" {
		return nil, fmt.Errorf("%w: its epk is not an X25519 key", ErrDecrypt)
	}
	epk, err := fromJWK(jwk{Kty: h.Epk.Kty, Crv: h.Epk.Crv, X: h.Epk.X})
	if err != nil {
		return nil, fmt.Errorf("%w: epk: %v", ErrDecrypt, err)
	}
	z, err := p.okp.ECDH(epk.okp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	wrapped, err1 := b64.DecodeString(parts[1])
	iv, err2 := b64.DecodeString(parts[2])
	ct, err3 := b64.DecodeString(parts[3])
	tag, err4 := b64.DecodeString(parts[4])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("%w: a part is not base64url", ErrDecrypt)
	}
	kek, err := aes.NewCipher(kdf(z))
	if err != nil {
		return nil, err
	}
	cek, err := josecipher.KeyUnwrap(kek, wrapped)
	if err != nil || len(cek) != 32 {
		return nil, fmt.Errorf("%w: the content key does not unwrap", ErrDecrypt)
	}
	gcm, err := newGCM(cek)
	if err != nil {
		return nil, err
	}
	if len(iv) != gcm.NonceSize() || len(tag) != gcm.Overhead() {
		return nil, fmt.Errorf("%w: the iv or the tag has the wrong length", ErrDecrypt)
	}
	pt, err := gcm.Open(nil, iv, append(ct, tag...), []byte(parts[0]))
	if err != nil {
		return nil, fmt.Errorf("%w: the content does not authenticate", ErrDecrypt)
	}
	return pt, nil
}
