package registry_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tetherhq/tether/registry"
)

// RFC 8785's published examples: section 3.2.2 (numbers, string escaping,
// literals), 3.2.3 (member order by UTF-16 code units) and appendix B
// (number serialization, from the IEEE 754 bit patterns).
func TestCanonicalJSONRFC8785Vectors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"3.2.2", `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"3.2.3", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"nested", `{"b": {"z": 1, "a": [ {"y": 2, "x": 1} ]}, "a": "x"}`, `{"a":"x","b":{"a":[{"x":1,"y":2}],"z":1}}`},
	} {
		got, err := registry.CanonicalJSON([]byte(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	for bits, want := range map[uint64]string{
		0x0000000000000000: "0",
		0x8000000000000000: "0",
		0x0000000000000001: "5e-324",
		0x7fefffffffffffff: "1.7976931348623157e+308",
		0x4340000000000000: "9007199254740992",
		0x444b1ae4d6e2ef50: "1e+21",
		0x3eb0c6f7a0b5ed8d: "0.000001",
		0x3eb0c6f7a0b5ed8c: "9.999999999999997e-7",
		0x4430000000000000: "295147905179352830000",
	} {
		in := strconv.FormatFloat(math.Float64frombits(bits), 'g', -1, 64)
		got, err := registry.CanonicalJSON([]byte("[" + in + "]"))
		if err != nil {
			t.Fatalf("%016x (%s): %v", bits, in, err)
		}
		if string(got) != "["+want+"]" {
			t.Errorf("%016x: got %s, want [%s]", bits, got, want)
		}
	}
	if _, err := registry.CanonicalJSON([]byte(`{"a":`)); registry.ErrorCode(err) != registry.CodeInvalid {
		t.Errorf("truncated JSON: got %v, want invalid", err)
	}
}

const signedPayload = `{"kind":"ApplicationInstance","apiVersion":"apps.vworkspace.io/v1alpha1",
	"metadata":{"name":"nc","namespace":"team-a"},"spec":{"replicas":2.0,"appRef":{"catalogId":"nextcloud"}}}`

func TestSignPayloadSurvivesReencoding(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := registry.SignPayload(priv, []byte(signedPayload))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base64.StdEncoding.DecodeString(sig); err != nil {
		t.Fatalf("signature %q is not standard base64: %v", sig, err)
	}
	// Same payload, re-encoded: other member order, whitespace, 2 for 2.0.
	reencoded := `{"apiVersion":"apps.vworkspace.io/v1alpha1","kind":"ApplicationInstance","metadata":{"namespace":"team-a","name":"nc"},"spec":{"appRef":{"catalogId":"nextcloud"},"replicas":2}}`
	if err := registry.VerifyPayload(pub, []byte(reencoded), sig); err != nil {
		t.Fatalf("re-encoded payload: %v", err)
	}
	tampered := `{"apiVersion":"apps.vworkspace.io/v1alpha1","kind":"ApplicationInstance","metadata":{"namespace":"team-b","name":"nc"},"spec":{"appRef":{"catalogId":"nextcloud"},"replicas":2}}`
	if err := registry.VerifyPayload(pub, []byte(tampered), sig); !errors.Is(err, registry.ErrPayloadSignatureInvalid) {
		t.Fatalf("tampered payload: got %v, want invalid", err)
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	for name, err := range map[string]error{
		"other key":  registry.VerifyPayload(other, []byte(signedPayload), sig),
		"not base64": registry.VerifyPayload(pub, []byte(signedPayload), "%%%"),
		"short":      registry.VerifyPayload(pub, []byte(signedPayload), base64.StdEncoding.EncodeToString([]byte("short"))),
		"no key":     registry.VerifyPayload(nil, []byte(signedPayload), sig),
	} {
		if !errors.Is(err, registry.ErrPayloadSignatureInvalid) {
			t.Errorf("%s: got %v, want invalid", name, err)
		}
	}

	jwk := registry.Ed25519JWK("sk-1", pub)
	if jwk.Kty != "OKP" || jwk.Crv != "Ed25519" || jwk.Kid != "sk-1" {
		t.Fatalf("jwk = %+v", jwk)
	}
	back, err := jwk.Ed25519PublicKey()
	if err != nil || !back.Equal(pub) {
		t.Fatalf("JWK round trip: %v", err)
	}
	if _, err := (registry.JWK{Kty: "EC", Crv: "P-256", X: jwk.X}).Ed25519PublicKey(); err == nil {
		t.Error("an EC JWK was taken for an Ed25519 key")
	}
}

// An independent implementation checks tether's signatures: openssl verifies
// the Ed25519 signature over the canonical bytes (pkeyutl -verify -rawin),
// and refuses it over a tampered payload.
func TestSignPayloadVerifiedByOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed: the independent check of payload signatures is skipped")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := registry.SignPayload(priv, []byte(signedPayload))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(sig)
	canonical, err := registry.CanonicalJSON([]byte(signedPayload))
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pubFile := write("pub.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	sigFile := write("sig", raw)
	verify := func(data []byte) ([]byte, error) {
		return exec.Command(openssl, "pkeyutl", "-verify", "-pubin", "-inkey", pubFile, "-rawin",
			"-in", write("data", data), "-sigfile", sigFile).CombinedOutput()
	}
	if out, err := verify(canonical); err != nil {
		t.Fatalf("openssl refused tether's signature: %v\n%s", err, out)
	}
	tampered := append([]byte(nil), canonical...)
	tampered[len(tampered)-3] ^= 1
	if out, err := verify(tampered); err == nil {
		t.Fatalf("openssl accepted a signature over a tampered payload:\n%s", out)
	}
}
