package agent

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/internal/jobsig"
)

// EventPayloadSignatureInvalid is the Audit event key of a job whose payload
// signature is missing or does not verify.
const EventPayloadSignatureInvalid = "JobPayloadSignatureInvalid"

// maxTrustedKeys bounds the trusted keys kept in the state file: the newest
// are kept. A cluster's key rotates rarely (an admin's act); this many is
// years of rotations.
const maxTrustedKeys = 32

// Key continuity (issue 28). The agent trusts the signing keys that reached
// it authenticated, and no other:
//
//   - the key its register answer carried (serverPublicKey), pinned then;
//     an agent that had none pins the first one a rotate answer carries;
//   - a key that a trusted key endorsed: tether's previous key signs a
//     statement introducing the next one at every rotation, and the key set
//     (GET /api/agent/keys) carries it. Chains are followed.
//
// The key set itself travels over the same channel as the jobs: a relay
// that swaps a payload can add its own key to it as easily. So a key found
// there and introduced by no trusted key is never used. The trusted keys
// live in the state file, so that a restart keeps what was learned.

// trusted returns the trusted key named kid.
func (a *Agent) trusted(kid string) (ed25519.PublicKey, bool) {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	return findKey(a.state.TrustedKeys, kid)
}

func findKey(keys []apiclient.JWK, kid string) (ed25519.PublicKey, bool) {
	for _, k := range keys {
		if k.Kid == kid {
			return publicKey(k)
		}
	}
	return nil, false
}

func publicKey(k apiclient.JWK) (ed25519.PublicKey, bool) {
	if k.Kty != "OKP" || k.Crv != "Ed25519" {
		return nil, false
	}
	x, err := base64.RawURLEncoding.DecodeString(k.X)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil, false
	}
	return ed25519.PublicKey(x), true
}

// pinned is k as the state file keeps it: the public key and its id.
func pinned(k apiclient.JWK) apiclient.JWK {
	return apiclient.JWK{Kty: k.Kty, Crv: k.Crv, X: k.X, Kid: k.Kid, Alg: k.Alg, Use: k.Use}
}

// learnKeys trusts the keys of set that a trusted key endorsed, following
// chains, and persists them. A key whose id is trusted already is never
// replaced by what the set says it is.
func (a *Agent) learnKeys(clusterID string, set []apiclient.JWK) {
	var learned []string
	err := a.saveState(func(st *State) bool {
		for progress := true; progress; {
			progress = false
			for _, k := range set {
				if _, ok := findKey(st.TrustedKeys, k.Kid); ok || k.EndorsedBy == "" {
					continue
				}
				endorser, ok := findKey(st.TrustedKeys, k.EndorsedBy)
				if !ok {
					continue
				}
				pub, ok := publicKey(k)
				if !ok || jobsig.VerifyEndorsement(endorser, clusterID, k.Kid, pub, k.Endorsement) != nil {
					continue
				}
				st.TrustedKeys = append(st.TrustedKeys, pinned(k))
				learned = append(learned, k.Kid+" (endorsed by "+k.EndorsedBy+")")
				progress = true
			}
		}
		if n := len(st.TrustedKeys); n > maxTrustedKeys {
			st.TrustedKeys = st.TrustedKeys[n-maxTrustedKeys:]
		}
		return len(learned) > 0
	})
	for _, l := range learned {
		a.log.Info("trusting a new payload-signing key", "key", l)
	}
	if err != nil {
		a.log.Warn("could not store the trusted signing keys; they are kept until the agent stops", "err", err)
	}
}

// checkSignature verifies a job's signature before it runs. An agent that
// trusts a key (pinned from a serverPublicKey: tether sends one only to
// clusters that require signed payloads) requires every job to carry a bound
// signature (jobSignature, format v2) by a trusted key, over the job as it
// arrived, with this agent's own cluster id. That holds whatever a later
// answer says: a rotate answer without serverPublicKey may be a relay's,
// and must not turn verification off. The legacy payload-only
// signature is never enough: it can be moved to another job. An agent whose
// credential pinned no key has nothing to verify against (a key fetched now
// would prove nothing) and runs jobs as an unsigned cluster's.
//
// It returns why the job must not run (a verdict: the job is failed), or an
// error when no verdict can be reached now: the key set could not be fetched
// because the server or the network is down or the agent is stopping. Such a
// job is not the job's fault and must not be failed for it; the caller leaves
// it unclaimed so that it is offered again.
func (a *Agent) checkSignature(ctx context.Context, j apiclient.Job) (why string, err error) {
	cred := a.client.Credential()
	a.stateMu.Lock()
	pinnedAny := len(a.state.TrustedKeys) > 0
	a.stateMu.Unlock()
	if cred.ServerPublicKey == nil && !pinnedAny {
		return "", nil
	}
	switch {
	case j.JobSignature == "" && j.Signature != "":
		return "job " + j.ID + " carries only a legacy payload signature, which does not bind the payload to the job; this agent requires jobSignature (is tether older than this agent, or did something on the way strip it?); it was not run", nil
	case j.JobSignature == "":
		return "the cluster requires signed payloads and job " + j.ID + " carries no signature; it was not run", nil
	case j.JobSignatureFormat != jobsig.FormatV2:
		return fmt.Sprintf("job %s's signature is in format %q, which this agent does not know (it knows %q); it was not run", j.ID, j.JobSignatureFormat, jobsig.FormatV2), nil
	}
	pub, ok := a.trusted(j.SignatureKeyID)
	if !ok {
		keys, err := a.client.SigningKeys(ctx)
		if err != nil {
			if !refused(err) {
				return "", fmt.Errorf("fetch the cluster's signing keys: %w", err)
			}
			return fmt.Sprintf("tether refused to give the cluster's signing keys to verify job %s: %v; it was not run", j.ID, err), nil
		}
		a.learnKeys(cred.ClusterID, keys)
		if pub, ok = a.trusted(j.SignatureKeyID); !ok {
			if _, offered := findKey(keys, j.SignatureKeyID); offered {
				return fmt.Sprintf("job %s is signed with key %q, which no key this agent trusts has endorsed (the key set offers it, but the key set proves nothing by itself); it was not run", j.ID, j.SignatureKeyID), nil
			}
			return fmt.Sprintf("job %s is signed with key %q, which is not among the cluster's signing keys; it was not run", j.ID, j.SignatureKeyID), nil
		}
	}
	err = jobsig.VerifyJob(pub, jobsig.Job{ClusterID: cred.ClusterID, JobID: j.ID, Kind: j.Kind, ExpiresAt: j.ExpiresAt, Payload: j.Payload}, j.JobSignature)
	var ce *jobsig.CanonicalError
	switch {
	case errors.As(err, &ce):
		return "job " + j.ID + "'s signature cannot be checked: its " + ce.Error() + "; it was not run", nil
	case err != nil:
		return "job " + j.ID + " does not match its signature (key " + j.SignatureKeyID + "): its payload, kind or expiry was changed, or the signature was made for another job or cluster; it was not run", nil
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
