package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tetherhq/tether/registry"
)

// The agent API's handlers. prepare has already checked the media types,
// authenticated the agent, applied the rate limit, read the body and checked
// its signature.

func (s *Server) handleRegister(c *call) error {
	bearer, _ := bearerToken(c.r)
	p, err := decodeRegister(c.body, bearer)
	if err != nil {
		reason := "bad_request" // a body that does not decode
		if registry.ErrorCode(err) == registry.CodeRegistrationTokenInvalid {
			reason = "missing" // no token in the body or the header
		}
		s.metrics.registerFail.WithLabelValues(string(registry.ErrorCode(err)), reason).Inc()
		return err
	}
	// Nobody is authenticated yet: the audit trail names where the attempt
	// came from.
	ctx := registry.WithActor(c.ctx, registry.Actor{Kind: registry.ActorAgent, Name: "unregistered@" + s.clientAddr(c.r)})
	issued, err := s.reg.Register(ctx, p)
	if err != nil {
		s.metrics.registrationFailed(err)
		return err
	}
	c.log().Info("agent registered", "cluster", issued.Cluster.ID, "credential", issued.Credential.ID,
		"capabilities", strings.Join(issued.Credential.Capabilities, ","))
	out := credentialJSON(issued)
	if err := s.withServerKey(c.ctx, issued, &out); err != nil {
		// The credential is issued and must reach the agent; it can fetch
		// the key from GET /api/agent/keys once the cause is fixed.
		c.log().Warn("answer without serverPublicKey", "cluster", issued.Cluster.ID, "err", err)
	}
	return writeJSON(c.w, http.StatusOK, out)
}

func (s *Server) handleRotate(c *call) error {
	// The public operator sends {}; any JSON object (or nothing) will do. An
	// agent may name capabilities to add (ones its cluster's policy now
	// requires): {"capabilities": ["hmac"]}.
	var body struct {
		Capabilities []string `json:"capabilities"`
		CSR          string   `json:"csr"` // renew the client certificate too
	}
	if err := decodeJSON(c.body, &body, false); err != nil {
		return err
	}
	issued, err := s.reg.RotateCredentialWith(c.ctx, c.agent, registry.RotateParams{Capabilities: body.Capabilities, CSR: body.CSR})
	if err != nil {
		return err
	}
	c.log().Info("credential rotated", "old", c.agent.Credential.ID, "new", issued.Credential.ID, "old_valid_until", issued.GraceUntil)
	out := credentialJSON(issued)
	if err := s.withServerKey(c.ctx, issued, &out); err != nil {
		// The credential is issued and must reach the agent; it can fetch
		// the key from GET /api/agent/keys once the cause is fixed.
		c.log().Warn("answer without serverPublicKey", "cluster", issued.Cluster.ID, "err", err)
	}
	return writeJSON(c.w, http.StatusOK, out)
}

func credentialJSON(ic *registry.IssuedCredential) credentialResponse {
	lease := registry.LeaseFor(&registry.Agent{Credential: &ic.Credential, Cluster: &ic.Cluster})
	return credentialResponse{
		ClusterID:    ic.Cluster.ID,
		Token:        ic.Token.Reveal(),
		ExpiresAt:    ic.Credential.ExpiresAt.UTC(),
		RotateAfter:  ic.Credential.RotateAfter.UTC(),
		GraceUntil:   ic.GraceUntil.UTC(),
		HMACKey:      ic.HMACKey.Reveal(),
		LeaseSeconds: int(lease / time.Second),
		Capabilities: ic.Credential.Capabilities,
		// Both empty unless the agent sent a csr.
		ClientCertificate: string(ic.ClientCertificate),
		CABundle:          string(ic.CABundle),
	}
}

// handlePoll is the long-poll. It subscribes to the cluster's wake-ups before
// looking, so a job queued in between is not missed; then it waits on the
// subscription, its deadline, the client and shutdown. An idle waiter costs
// this request's goroutine, one channel and one runtime timer: no database
// work until a wake-up.
func (s *Server) handlePoll(c *call) error {
	p, err := parsePoll(c.r.URL.Query())
	if err != nil {
		return err
	}
	if p.Cluster != c.agent.Cluster.ID {
		return errf(registry.CodeForbidden, "this credential belongs to cluster %s, not to the requested cluster", c.agent.Cluster.ID)
	}
	release := func() {}
	if p.Wait > 0 {
		// Counted from the start, not from when it begins to wait, so that
		// a client cannot open more than its share by racing.
		if release, err = s.holdPoll(c); err != nil {
			return err
		}
	}
	wake, unsubscribe, err := s.reg.SubscribeJobs(c.agent.Cluster.ID)
	if err != nil {
		release()
		return err
	}
	// The slot is taken before the subscription and given back before it
	// ends: whoever sees the poll subscribed sees its slot taken.
	defer func() {
		release()
		unsubscribe()
	}()
	var deadline <-chan time.Time
	if p.Wait > 0 {
		t := time.NewTimer(p.Wait)
		defer t.Stop()
		deadline = t.C
	}
	held := false
	defer func() {
		if held {
			s.metrics.heldPolls.Dec()
		}
	}()
	for {
		jobs, err := offStack(func() ([]registry.Job, error) { return s.reg.PollJobs(c.ctx, c.agent, p.Cluster, p.Limit) })
		if err != nil {
			return err
		}
		if len(jobs) > 0 || p.Wait == 0 || s.isDraining() {
			return s.writeJobs(c, jobs)
		}
		if !held {
			held = true
			s.metrics.heldPolls.Inc()
		}
		select {
		case <-wake:
			// A job was queued, or the cluster changed (disabled, deleted):
			// check the credential again, then look.
			a, err := offStack(func() (*registry.Agent, error) { return s.reg.Authenticate(c.ctx, bearerOf(c.r), registry.AuthAny) })
			if err != nil {
				return err
			}
			c.agent = a
		case <-deadline:
			return s.writeJobs(c, nil)
		case <-s.draining:
			return s.writeJobs(c, nil)
		case <-c.r.Context().Done():
			return nil // the client left; nobody reads an answer
		}
	}
}

func bearerOf(r *http.Request) string {
	t, _ := bearerToken(r)
	return t
}

func (s *Server) writeJobs(c *call, jobs []registry.Job) error {
	lease := int(registry.LeaseFor(c.agent) / time.Second)
	out := jobsResponse{Jobs: make([]wireJob, len(jobs))}
	for i := range jobs {
		// The plaintext (opened if sealed) is what is signed; the wire
		// carries it encrypted when the cluster requires that.
		plain, encrypted, err := s.reg.DeliverPayload(c.agent.Cluster, &jobs[i])
		if err != nil {
			return err
		}
		jobs[i].Payload = plain
		out.Jobs[i] = toWireJob(&jobs[i], lease)
		if c.agent.Cluster.Policy.RequireSignedPayloads {
			sig, kid, err := s.reg.SignClusterPayload(c.ctx, c.agent.Cluster.ID, out.Jobs[i].Payload)
			if err != nil {
				return err
			}
			out.Jobs[i].Signature, out.Jobs[i].SignatureKeyID = sig, kid
		}
		if encrypted != "" {
			out.Jobs[i].Payload, out.Jobs[i].EncryptedPayload = nil, encrypted
		}
	}
	return writeJSON(c.w, http.StatusOK, out)
}

// handleKeys is GET /api/agent/keys: the cluster's payload-signing public
// keys as a JWK set, the current key first.
func (s *Server) handleKeys(c *call) error {
	keys, err := s.reg.PublishedSigningKeys(c.ctx, c.agent.Cluster)
	if err != nil {
		return err
	}
	return writeJSON(c.w, http.StatusOK, map[string]any{"keys": keys})
}

// withServerKey adds the cluster's signing key to a register or rotate
// answer when the cluster requires signed payloads.
func (s *Server) withServerKey(ctx context.Context, ic *registry.IssuedCredential, out *credentialResponse) error {
	if !ic.Cluster.Policy.RequireSignedPayloads {
		return nil
	}
	k, err := s.reg.CurrentSigningKey(ctx, ic.Cluster.ID)
	if err != nil {
		return err
	}
	jwk := registry.Ed25519JWK(k.ID, k.PublicKey)
	out.ServerPublicKey = &jwk
	return nil
}

func (s *Server) handleAck(c *call) error {
	claim, err := s.reg.AckJob(c.ctx, c.agent, c.jobID)
	if err != nil {
		return err
	}
	h := c.w.Header()
	if c.agent.Credential.HasCapability(registry.CapabilityLease) {
		h.Set(headerClaimID, claim.ClaimID)
		if !claim.LeaseExpiresAt.IsZero() {
			h.Set(headerLeaseExpiresAt, claim.LeaseExpiresAt.UTC().Format(time.RFC3339Nano))
		}
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) handleStatus(c *call) error {
	report, err := decodeStatus(c.body)
	if err != nil {
		return err
	}
	if err := s.reg.ReportStatus(c.ctx, c.agent, c.jobID, claimID(c.r), report); err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) handleHeartbeat(c *call) error {
	until, err := s.reg.HeartbeatJob(c.ctx, c.agent, c.jobID, claimID(c.r))
	if err != nil {
		return err
	}
	if !until.IsZero() {
		c.w.Header().Set(headerLeaseExpiresAt, until.UTC().Format(time.RFC3339Nano))
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) handleResult(c *call) error {
	res, err := decodeResult(c.body)
	if err != nil {
		return err
	}
	kind, err := s.reg.ReportResult(c.ctx, c.agent, c.jobID, claimID(c.r), res)
	if err != nil {
		return err
	}
	s.jobFinished(kind, res.Outcome)
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) handleEvents(c *call) error {
	hint, events, err := decodeEvents(c.body)
	if err != nil {
		return err
	}
	if _, err := s.reg.AppendEvents(c.ctx, c.agent, hint, events); err != nil {
		return err
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

func claimID(r *http.Request) string { return strings.TrimSpace(r.Header.Get(headerClaimID)) }

// --- health and metrics ---

func (s *Server) handleHealth(c *call) error {
	return writeJSON(c.w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReady says whether this process should get traffic: the store
// answers with its schema current and takes writes (registry.Ready, whose
// outcome is reused for a moment so that frequent probes do not load the
// writer), and shutdown has not begun.
func (s *Server) handleReady(c *call) error {
	if s.leaving.Load() || s.isDraining() {
		return errf(registry.CodeUnavailable, "shutting down")
	}
	if err := s.reg.Ready(c.ctx); err != nil {
		c.log().Warn("not ready", "err", err, "store", errors.Unwrap(err), "cause", driverCause(err))
		// Unauthenticated: Ready says what is wrong, not where (the log
		// says where).
		return errf(registry.CodeUnavailable, "not ready: %s", registry.ErrorMessage(err))
	}
	return writeJSON(c.w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) handleMetrics(c *call) error {
	s.promh.ServeHTTP(c.w, c.r)
	return nil
}

// writeJSON answers with v in the protocol's media type.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return registry.Internal(err, "encode the answer")
	}
	h := w.Header()
	h.Set("Content-Type", mediaTypeOf(w))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
	return nil
}
