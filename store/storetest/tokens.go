package storetest

import (
	"encoding/base64"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
)

func testTokens(t *testing.T, newStore NewStore) {
	t.Run("Shape", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, tok := e.cluster("prod", nil)
		s := tok.Secret.Reveal()
		if !strings.HasPrefix(s, "tether_reg_") || !registry.LooksLikeSecret(s) {
			t.Fatalf("token %q lacks its recognizable prefix", s)
		}
		// The public id part is in the token; the secret part carries at least
		// 128 bits (32 base32 characters = 160).
		if _, id, _ := strings.Cut(tok.Token.ID, "-"); !strings.Contains(s, id) {
			t.Fatalf("token does not carry its public id %s", tok.Token.ID)
		}
		if parts := strings.Split(s, "_"); len(parts[len(parts)-1]) < 26 {
			t.Fatalf("secret part %q is too short", parts[len(parts)-1])
		}
		if got := tok.Token.ExpiresAt.Sub(tok.Token.CreatedAt); got != registry.DefaultTokenTTL {
			t.Fatalf("default TTL = %s", got)
		}
		for _, ttl := range []time.Duration{30 * time.Second, 8 * 24 * time.Hour} {
			_, err := e.reg.IssueToken(e.ctx, "prod", ttl)
			wantCode(t, err, registry.CodeInvalid)
		}
	})

	t.Run("IssuingVoidsOlderUnused", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, first := e.cluster("prod", nil)
		second, err := e.reg.IssueToken(e.ctx, c.ID, time.Hour)
		wantNoErr(t, err)
		old, _ := e.store.TokenGet(e.ctx, first.Token.ID)
		if old.State(e.clock.Now()) != registry.TokenRevoked || old.RevokeReason != registry.TokenRevokedSuperseded {
			t.Fatalf("older token state %s reason %q, want revoked/superseded", old.State(e.clock.Now()), old.RevokeReason)
		}
		_, err = e.reg.Register(e.ctx, registry.RegisterParams{Token: first.Secret.Reveal()})
		wantCode(t, err, registry.CodeRegistrationTokenInvalid)
		e.register(second)
	})

	t.Run("ExactlyOneOfConcurrentRedemptions", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("prod", nil)
		const n = 50
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal()})
				results <- err
			}()
		}
		close(start)
		wg.Wait()
		close(results)
		wins := 0
		for err := range results {
			if err == nil {
				wins++
				continue
			}
			wantCode(t, err, registry.CodeRegistrationTokenInvalid)
		}
		if wins != 1 {
			t.Fatalf("%d of %d concurrent redemptions won, want exactly 1", wins, n)
		}
		creds, _ := e.store.CredentialList(e.ctx, c.ID)
		if len(creds) != 1 {
			t.Fatalf("%d credentials issued, want 1", len(creds))
		}
		if got, _ := e.reg.GetCluster(e.ctx, c.ID); got.State != registry.ClusterActive {
			t.Fatalf("cluster state %s after registration", got.State)
		}
	})

	t.Run("EveryRefusalLooksTheSame", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, used := e.cluster("used", nil)
		e.register(used)
		_, expired := e.cluster("expired", nil)
		_, revoked := e.cluster("revoked", nil)
		_, err := e.reg.RevokeToken(e.ctx, revoked.Token.ID, "leaked in chat")
		wantNoErr(t, err)
		e.clock.Advance(registry.DefaultTokenTTL + time.Second)

		attempts := map[string]string{
			"used":         used.Secret.Reveal(),
			"expired":      expired.Secret.Reveal(),
			"revoked":      revoked.Secret.Reveal(),
			"unknown":      strings.Replace(used.Secret.Reveal(), "tether_reg_01", "tether_reg_02", 1),
			"wrong secret": used.Secret.Reveal()[:len(used.Secret.Reveal())-4] + "aaaa",
			"malformed":    "hello",
			"empty":        "",
			"credential":   "tether_cred_01jd000000000000000000000_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		}
		var message string
		for name, token := range attempts {
			_, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: token})
			wantCode(t, err, registry.CodeRegistrationTokenInvalid)
			if message == "" {
				message = err.Error()
			} else if err.Error() != message {
				t.Fatalf("%s: message %q differs from %q: refusals must not tell a guesser why", name, err.Error(), message)
			}
		}
		// The audit trail keeps the reason of each refusal that named a real
		// token, and never the token; garbage is not audited (anyone can
		// send it).
		failures := e.auditFor(registry.AuditRegisterFailed)
		if len(failures) != 4 {
			t.Fatalf("%d failure audit entries, want 4 (used, expired, revoked, wrong secret): %+v", len(failures), failures)
		}
		reasons := map[string]bool{}
		for _, f := range failures {
			reasons[f.Reason] = true
			for _, token := range attempts {
				if len(token) > 10 && strings.Contains(f.Reason+f.TargetID, token) {
					t.Fatalf("audit entry holds a token: %+v", f)
				}
			}
		}
		for _, want := range []string{"token used", "token expired", "token revoked", "unknown token (secret does not match)"} {
			if !reasons[want] {
				t.Fatalf("no audit entry with reason %q in %v", want, reasons)
			}
		}
	})

	t.Run("DisabledClusterKeepsToken", func(t *testing.T) {
		e := newEnv(t, newStore)
		c, tok := e.cluster("prod", nil)
		_, err := e.reg.SetClusterEnabled(e.ctx, c.ID, false, "")
		wantNoErr(t, err)
		_, err = e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal()})
		wantCode(t, err, registry.CodeClusterDisabled)
		_, err = e.reg.SetClusterEnabled(e.ctx, c.ID, true, "")
		wantNoErr(t, err)
		e.register(tok) // the refusal did not use the token up
	})

	t.Run("RequiredCapability", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, tok := e.cluster("prod", func(s *registry.ClusterSpec) {
			s.Policy.RequiredCapabilities = []string{registry.CapabilityHMAC}
		})
		_, err := e.reg.Register(e.ctx, registry.RegisterParams{Token: tok.Secret.Reveal(), Capabilities: []string{"lease"}})
		wantCode(t, err, registry.CodeCapabilityRequired)
		a, cred := e.register(tok, "HMAC", "lease", "unknown-future-thing")
		if got := strings.Join(a.Credential.Capabilities, ","); got != "hmac,lease" {
			t.Fatalf("negotiated %q, want hmac,lease", got)
		}
		key, err := base64.RawURLEncoding.DecodeString(cred.HMACKey.Reveal())
		if err != nil || len(key) != 32 {
			t.Fatalf("hmac key %d bytes, err %v", len(key), err)
		}
		stored, err := e.reg.HMACKey(a)
		wantNoErr(t, err)
		if string(stored) != string(key) {
			t.Fatal("the HMAC key read back differs from the one issued")
		}
	})

	t.Run("PolicyAppliesAtNextRotation", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, cred := e.agent("prod", registry.CapabilityLease)
		_, err := e.reg.ModifyCluster(e.ctx, "prod", func(s *registry.ClusterSpec) error {
			s.Policy.RequiredCapabilities = []string{registry.CapabilityHMAC}
			return nil
		})
		wantNoErr(t, err)
		// The existing credential keeps working, below policy...
		_, err = e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		creds, err := e.reg.ListCredentials(e.ctx, "prod")
		wantNoErr(t, err)
		c, err := e.reg.GetCluster(e.ctx, "prod")
		wantNoErr(t, err)
		if got := creds[0].BelowPolicy(c.Policy); strings.Join(got, ",") != "hmac" {
			t.Fatalf("below policy by %v, want hmac", got)
		}
		a := &registry.Agent{Credential: &creds[0], Cluster: c}
		// ...but cannot renew below it: a rotation without hmac is refused
		// and the credential stays as it was (it can still rotate).
		_, err = e.reg.RotateCredential(e.ctx, a)
		wantCode(t, err, registry.CodeCapabilityRequired)
		next, err := e.reg.RotateCredentialAdding(e.ctx, a, []string{"HMAC", "unknown-future-thing"})
		wantNoErr(t, err)
		if got := strings.Join(next.Credential.Capabilities, ","); got != "hmac,lease" || next.HMACKey == "" {
			t.Fatalf("rotated to %q (hmac key issued: %v), want hmac,lease with a key", got, next.HMACKey != "")
		}
		if len(next.Credential.BelowPolicy(c.Policy)) != 0 {
			t.Fatal("the rotated credential is still below policy")
		}
		if got := e.auditFor(registry.AuditCredentialRotate); len(got) != 1 || !strings.Contains(got[0].Reason, "adds capabilities hmac") {
			t.Fatalf("rotation audit %+v does not say what it added", got)
		}
	})

	t.Run("Revoke", func(t *testing.T) {
		e := newEnv(t, newStore)
		_, tok := e.cluster("prod", nil)
		_, err := e.reg.RevokeToken(e.ctx, tok.Token.ID, "")
		wantNoErr(t, err)
		_, err = e.reg.RevokeToken(e.ctx, tok.Token.ID, "")
		wantCode(t, err, registry.CodeConflict)
		_, err = e.reg.RevokeToken(e.ctx, "rt-nope", "")
		wantCode(t, err, registry.CodeNotFound)
		_, fresh := e.cluster("other", nil)
		e.register(fresh)
		_, err = e.reg.RevokeToken(e.ctx, fresh.Token.ID, "")
		wantCode(t, err, registry.CodeConflict) // used: revoke the credential instead
	})
}

func testCredentials(t *testing.T, newStore NewStore) {
	t.Run("LifetimeAndBearerChecks", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, cred := e.agent("prod")
		now := e.clock.Now()
		if !a.Credential.ExpiresAt.Equal(now.Add(registry.DefaultCredentialTTL)) || !a.Credential.RotateAfter.Equal(now.Add(registry.DefaultRotateAfter)) {
			t.Fatalf("expires %s rotate-after %s", a.Credential.ExpiresAt, a.Credential.RotateAfter)
		}
		tok := cred.Token.Reveal()
		if !strings.HasPrefix(tok, "tether_cred_") {
			t.Fatalf("credential %q lacks its prefix", tok)
		}
		// The last character changed, whatever it was (a fixed "x" is the
		// same token when the random one already ends in x).
		last := "x"
		if strings.HasSuffix(tok, "x") {
			last = "y"
		}
		for _, bad := range []string{"", "nope", tok[:len(tok)-1] + last, strings.ToUpper(tok)} {
			_, err := e.reg.Authenticate(e.ctx, bad, registry.AuthAny)
			wantCode(t, err, registry.CodeUnauthorized)
		}
		e.clock.Advance(registry.DefaultCredentialTTL)
		_, err := e.reg.Authenticate(e.ctx, tok, registry.AuthAny)
		wantCode(t, err, registry.CodeUnauthorized)
		// An expired credential may still rotate inside its grace...
		old, err := e.reg.Authenticate(e.ctx, tok, registry.AuthRotate)
		wantNoErr(t, err)
		next, err := e.reg.RotateCredential(e.ctx, old)
		wantNoErr(t, err)
		if _, err := e.reg.Authenticate(e.ctx, next.Token.Reveal(), registry.AuthAny); err != nil {
			t.Fatalf("rotated credential refused: %v", err)
		}
		// ...and not after it.
		e.clock.Advance(registry.DefaultRotationGrace + time.Second)
		_, err = e.reg.Authenticate(e.ctx, tok, registry.AuthRotate)
		wantCode(t, err, registry.CodeUnauthorized)
	})

	t.Run("RotationGrace", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, cred := e.agent("prod", registry.CapabilityLease, registry.CapabilityHMAC)
		next, err := e.reg.RotateCredential(e.ctx, a)
		wantNoErr(t, err)
		if got := next.GraceUntil.Sub(e.clock.Now()); got != registry.DefaultRotationGrace {
			t.Fatalf("grace = %s, want %s", got, registry.DefaultRotationGrace)
		}
		if strings.Join(next.Credential.Capabilities, ",") != "hmac,lease" || next.HMACKey == "" {
			t.Fatal("rotation did not carry the capabilities over")
		}
		if next.Credential.RotatedFrom != a.Credential.ID {
			t.Fatalf("rotatedFrom = %q", next.Credential.RotatedFrom)
		}
		// The public operator keeps using the old token for a while.
		e.clock.Advance(registry.DefaultRotationGrace - time.Minute)
		old, err := e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		if old.Credential.State(e.clock.Now()) != registry.CredentialGrace {
			t.Fatalf("old credential state %s, want grace", old.Credential.State(e.clock.Now()))
		}
		e.clock.Advance(2 * time.Minute)
		_, err = e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthAny)
		wantCode(t, err, registry.CodeUnauthorized)
		_, err = e.reg.Authenticate(e.ctx, next.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		if len(e.auditFor(registry.AuditCredentialRotate)) != 1 {
			t.Fatal("rotation not audited")
		}
	})

	t.Run("ForcedRotation", func(t *testing.T) {
		// Forced rotation must not cut off the public operator, which never
		// rotates on a 401: the credential keeps working, is due for
		// rotation now, and stops working once the grace has passed unless
		// its agent rotates. Whether it will, tether does not know: it
		// says when the agent last rotated, and warns when it never did.
		e := newEnv(t, newStore)
		a, cred := e.agent("prod")
		grace := e.reg.Config().RotationGrace
		out, err := e.reg.ForceRotationOutcome(e.ctx, a.Cluster.ID, "suspected leak")
		wantNoErr(t, err)
		if out.Credentials != 1 || out.Grace != grace || !out.GraceUntil.Equal(e.clock.Now().Add(grace)) {
			t.Fatalf("forced rotation = %+v, want 1 credential stopping after the grace", out)
		}
		if !strings.Contains(out.Warning, "has never rotated its credential") {
			t.Fatalf("forced rotation of an agent that never rotated warned %q", out.Warning)
		}
		forced, err := e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		if now := e.clock.Now(); forced.Credential.RotateAfter.After(now) || !forced.Credential.ExpiresAt.Equal(now.Add(grace)) {
			t.Fatalf("forced credential rotateAfter %v expiresAt %v; want due now and expiring after the grace", forced.Credential.RotateAfter, forced.Credential.ExpiresAt)
		}
		rotatedAt := e.clock.Now()
		next, err := e.reg.RotateCredential(e.ctx, forced)
		wantNoErr(t, err)
		_, err = e.reg.Authenticate(e.ctx, next.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		// Both credentials, as the store reads them back, say the agent
		// rotated then; another forced rotation warns of nothing.
		creds, err := e.reg.ListCredentials(e.ctx, a.Cluster.ID)
		wantNoErr(t, err)
		for _, c := range creds {
			if !c.AgentRotatedAt().Equal(rotatedAt) {
				t.Fatalf("credential %s: agent rotated at %v, want %v", c.ID, c.AgentRotatedAt(), rotatedAt)
			}
		}
		if registry.AgentNeverRotated(creds, e.clock.Now()) {
			t.Fatal("an agent that rotated is said never to have")
		}
		// The forced credential gained no time from rotating, and lost it all
		// once the grace passed.
		e.clock.Advance(grace)
		for _, purpose := range []registry.AuthPurpose{registry.AuthAny, registry.AuthRotate} {
			_, err = e.reg.Authenticate(e.ctx, cred.Token.Reveal(), purpose)
			wantCode(t, err, registry.CodeUnauthorized)
		}
		f := e.auditFor(registry.AuditCredentialForce)
		if len(f) != 1 || f[0].Reason != "suspected leak" {
			t.Fatalf("forced rotation audit = %+v", f)
		}

		// Not rotated within the grace: the credential stops working.
		b, bcred := e.agent("idle")
		_, err = e.reg.ForceRotation(e.ctx, b.Cluster.ID, "")
		wantNoErr(t, err)
		e.clock.Advance(grace)
		_, err = e.reg.Authenticate(e.ctx, bcred.Token.Reveal(), registry.AuthRotate)
		wantCode(t, err, registry.CodeUnauthorized)
	})

	t.Run("RotatesOnce", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, cred := e.agent("prod")
		first, err := e.reg.RotateCredential(e.ctx, a)
		wantNoErr(t, err)
		// The old token still works through its grace (the operator keeps
		// using it from some components), but mints nothing more.
		old, err := e.reg.Authenticate(e.ctx, cred.Token.Reveal(), registry.AuthRotate)
		wantNoErr(t, err)
		_, err = e.reg.RotateCredential(e.ctx, old)
		wantCode(t, err, registry.CodeConflict)
		if !strings.Contains(err.Error(), "rotates once") {
			t.Fatalf("%v does not say why", err)
		}
		creds, _ := e.reg.ListCredentials(e.ctx, a.Cluster.ID)
		if len(creds) != 2 {
			t.Fatalf("%d credentials after a refused second rotation, want 2", len(creds))
		}
		// Concurrent rotations of one credential: exactly one mints.
		fresh, err := e.reg.Authenticate(e.ctx, first.Token.Reveal(), registry.AuthAny)
		wantNoErr(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.reg.RotateCredential(e.ctx, fresh)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		wins := 0
		for err := range errs {
			if err == nil {
				wins++
			} else if registry.ErrorCode(err) != registry.CodeConflict {
				t.Fatalf("a losing rotation failed with %v", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d of 8 concurrent rotations of one credential succeeded, want 1", wins)
		}
	})

	t.Run("RevokeIsImmediate", func(t *testing.T) {
		e := newEnv(t, newStore)
		a, cred := e.agent("prod")
		next, err := e.reg.RotateCredential(e.ctx, a)
		wantNoErr(t, err)
		n, err := e.reg.RevokeCredentials(e.ctx, a.Cluster.ID, "cluster compromised")
		wantNoErr(t, err)
		if n != 2 {
			t.Fatalf("revoked %d credentials, want 2 (the current one and the one in grace)", n)
		}
		for _, tok := range []registry.Secret{cred.Token, next.Token} {
			for _, purpose := range []registry.AuthPurpose{registry.AuthAny, registry.AuthRotate} {
				_, err := e.reg.Authenticate(e.ctx, tok.Reveal(), purpose)
				wantCode(t, err, registry.CodeUnauthorized)
			}
		}
		creds, _ := e.reg.ListCredentials(e.ctx, a.Cluster.ID)
		for _, c := range creds {
			if c.State(e.clock.Now()) != registry.CredentialRevoked || c.RevokeReason != "cluster compromised" {
				t.Fatalf("credential %s state %s reason %q", c.ID, c.State(e.clock.Now()), c.RevokeReason)
			}
		}
		// Rotating a revoked credential (a race with revocation) fails.
		_, err = e.reg.RotateCredential(e.ctx, a)
		wantCode(t, err, registry.CodeUnauthorized)
		// A new one-time token gets the agent back.
		tok, err := e.reg.IssueToken(e.ctx, a.Cluster.ID, 0)
		wantNoErr(t, err)
		e.register(tok)
	})
}
