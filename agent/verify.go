package agent

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/gowebpki/jcs"

	"github.com/tetherhq/tether/apiclient"
)

// EventPayloadSignatureInvalid is the Audit event key of a job whose payload
// signature is missing or does not verify.
const EventPayloadSignatureInvalid = "JobPayloadSignatureInvalid"

// signingKeys caches the cluster's payload-signing public keys by id.
type signingKeys struct {
	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
}

func (s *signingKeys) add(ks ...apiclient.JWK) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]ed25519.PublicKey{}
	}
	for _, k := range ks {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err == nil && len(x) == ed25519.PublicKeySize {
			s.keys[k.Kid] = ed25519.PublicKey(x)
		}
	}
}

func (s *signingKeys) get(kid string) (ed25519.PublicKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[kid]
	return k, ok
}

// checkSignature verifies a job's payload signature before it runs. A job
// must be signed when the credential names a server key (tether sends one
// only to clusters that require signed payloads); a signature present on any
// job is verified. The key comes from the cache, else from the credential,
// else from GET /api/agent/keys.
//
// It returns why the job must not run (a verdict: the job is failed), or an
// error when no verdict can be reached now: the keys could not be fetched
// because the server or the network is down or the agent is stopping. Such a
// job is not the job's fault and must not be failed for it; the caller leaves
// it unclaimed so that it is offered again.
func (a *Agent) checkSignature(ctx context.Context, j apiclient.Job) (why string, err error) {
	required := a.client.Credential().ServerPublicKey
	if j.Signature == "" {
		if required != nil {
			return "the cluster requires signed payloads and job " + j.ID + " carries no signature; it was not run", nil
		}
		return "", nil
	}
	pub, ok := a.sigKeys.get(j.SignatureKeyID)
	if !ok && required != nil {
		a.sigKeys.add(*required)
		pub, ok = a.sigKeys.get(j.SignatureKeyID)
	}
	if !ok {
		keys, err := a.client.SigningKeys(ctx)
		if err != nil {
			if !refused(err) {
				return "", fmt.Errorf("fetch the cluster's signing keys: %w", err)
			}
			return fmt.Sprintf("tether refused to give the cluster's signing keys to verify job %s: %v; it was not run", j.ID, err), nil
		}
		a.sigKeys.add(keys...)
		if pub, ok = a.sigKeys.get(j.SignatureKeyID); !ok {
			return fmt.Sprintf("job %s is signed with key %q, which is not among the cluster's signing keys; it was not run", j.ID, j.SignatureKeyID), nil
		}
	}
	sig, err := base64.StdEncoding.DecodeString(j.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return "job " + j.ID + "'s signature is not a base64 Ed25519 signature; it was not run", nil
	}
	canonical, err := jcs.Transform(j.Payload)
	if err != nil || !ed25519.Verify(pub, canonical, sig) {
		return "job " + j.ID + "'s payload does not match its signature (key " + j.SignatureKeyID + "); it was not run", nil
	}
	return "", nil
}

// refused reports whether tether answered with a client error other than
// 429: an answer that will not change by asking again. Anything else (the
// network, a 5xx, a 429 past the retries, the agent stopping) may.
func refused(err error) bool {
	var apiErr *apiclient.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode >= 400 && apiErr.StatusCode < 500 &&
		apiErr.StatusCode != http.StatusTooManyRequests
}
