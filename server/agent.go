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
		s.metrics.registerFail.WithLabelValues(reason).Inc()
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
// subscription, its deadline, the client and shutdown. A poll over plain
// HTTP/1.1 waits parked, outside net/http (park.go): the connection, a
// timer and its subscription, no goroutine and no buffers; when every look
// slot is busy it parks before its admission (park_early.go). Otherwise an idle waiter costs this request's
// goroutine (and net/http's reader), one channel and one runtime timer: no
// database work until a wake-up. Its frame is what stays on the stack while
// it waits: the setup and each look run in calls that return (see
// serveHTTP).
func (s *Server) handlePoll(c *call) error {
	pl, err := s.startPoll(c)
	if err != nil {
		return err
	}
	defer s.endPoll(pl)
	deadline := time.Now().Add(pl.Wait)
	var expired <-chan time.Time
	answered, err := s.firstLook(c, pl)
	for {
		if answered || err != nil {
			return err
		}
		if s.park(c, pl, deadline) {
			return nil // the parked poll answers and ends it
		}
		if expired == nil {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-pl.wake:
			// A job was queued, or the cluster changed (disabled, deleted):
			// check the credential again, then look.
			if err := s.reauthenticate(c); err != nil {
				return err
			}
			answered, err = s.lookForJobs(c, pl)
		case <-expired:
			return s.writeJobs(c, nil)
		case <-s.draining:
			return s.writeJobs(c, nil)
		case <-c.r.Context().Done():
			return nil // the client left; nobody reads an answer
		}
	}
}

// heldPoll is a long-poll's state: its parameters, its held-poll slot and
// its subscription.
type heldPoll struct {
	pollParams
	slot        bool // a held-poll slot is taken (wait > 0)
	cred, addr  string
	wake        <-chan struct{}
	unsubscribe func()
	held        bool // counted in the held-polls gauge
	parked      bool // handed to a parked poll, which ends it
}

// startPoll parses the poll, takes its held-poll slot and subscribes to its
// cluster's wake-ups.
func (s *Server) startPoll(c *call) (*heldPoll, error) {
	p, err := parsePoll(c.r.URL.Query())
	if err != nil {
		return nil, err
	}
	if p.Cluster != c.agent.Cluster.ID {
		return nil, errf(registry.CodeForbidden, "this credential belongs to cluster %s, not to the requested cluster", c.agent.Cluster.ID)
	}
	pl := &heldPoll{pollParams: p}
	if p.Wait > 0 {
		// Counted from the start, not from when it begins to wait, so that
		// a client cannot open more than its share by racing.
		if pl.cred, pl.addr, err = s.holdPoll(c); err != nil {
			return nil, err
		}
		pl.slot = true
	}
	if pl.wake, pl.unsubscribe, err = s.reg.SubscribeJobs(c.agent.Cluster.ID); err != nil {
		s.releasePoll(pl)
		return nil, err
	}
	return pl, nil
}

// endPoll undoes startPoll. The slot is taken before the subscription and
// given back before it ends: whoever sees the poll subscribed sees its slot
// taken.
func (s *Server) endPoll(pl *heldPoll) {
	if !pl.parked {
		s.stopPoll(pl)
	}
}

// stopPoll is endPoll's work, which a parked poll does when it ends.
func (s *Server) stopPoll(pl *heldPoll) {
	s.releasePoll(pl)
	pl.unsubscribe()
	if pl.held {
		s.metrics.heldPolls.Dec()
	}
}

func (s *Server) releasePoll(pl *heldPoll) {
	if pl.slot {
		s.polls.release(pl.cred, pl.addr)
	}
}

// lookForJobs looks once, and answers when there are jobs, when the poll
// does not wait or when the server is shutting down. The registry prepares
// the batch; a job it set aside is logged here and never holds back the
// others.
func (s *Server) lookForJobs(c *call, pl *heldPoll) (answered bool, err error) {
	d, err := offStack(func() (*registry.Delivery, error) { return s.reg.DeliverJobs(c.ctx, c.agent, pl.Cluster, pl.Limit) })
	if err != nil {
		return true, err
	}
	for _, f := range d.Failed {
		c.log().Warn("job is undeliverable; ended failed", "job", f.JobID, "reason", f.Reason)
		s.jobFinished(f.Kind, registry.OutcomeFailed)
	}
	for _, f := range d.Deferred {
		c.log().Warn("cannot prepare job for delivery on this replica; left queued for another poll", "job", f.JobID, "reason", f.Reason)
	}
	if len(d.Jobs) > 0 || pl.Wait == 0 || s.isDraining() {
		return true, s.writeJobs(c, d.Jobs)
	}
	if !pl.held {
		pl.held = true
		s.metrics.heldPolls.Inc()
	}
	return false, nil
}

// reauthenticate checks a woken poll's credential (and client certificate)
// again: it may have been revoked, or its cluster disabled.
func (s *Server) reauthenticate(c *call) error {
	a, err := offStack(func() (*registry.Agent, error) { return s.authenticateAgent(c, bearerOf(c.r), registry.AuthAny) })
	if err != nil {
		return err
	}
	c.agent = a
	return nil
}

func bearerOf(r *http.Request) string {
	t, _ := bearerToken(r)
	return t
}

// writeJobs answers a poll with its prepared jobs.
func (s *Server) writeJobs(c *call, jobs []registry.DeliveredJob) error {
	out := jobsResponse{Jobs: make([]wireJob, len(jobs))}
	for i := range jobs {
		out.Jobs[i] = toWireJob(&jobs[i])
	}
	s.traceDeliveries(c, jobs)
	return writeJSON(c.w, http.StatusOK, out)
}

// handleKeys is GET /api/agent/keys: the cluster's payload-signing public
// keys as a JWK set, the current key first, each with the endorsement by
// the key it replaced. The set proves nothing by itself (it travels with
// the jobs): an agent takes from it only keys a key it trusts endorsed.
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
	jwk := k.JWK()
	out.ServerPublicKey = &jwk
	return nil
}

func (s *Server) handleAck(c *call) error {
	claim, err := s.reg.AckJob(c.ctx, c.agent, c.jobID)
	if err != nil {
		return err
	}
	s.metrics.jobs.acked(c.agent.Cluster, claim.Job)
	c.linkJobTrace(claim.Job)
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
	j, err := s.reg.ReportResult(c.ctx, c.agent, c.jobID, claimID(c.r), res)
	if err != nil {
		return err
	}
	s.jobFinished(j.Kind, res.Outcome)
	s.metrics.jobs.finished(c.agent.Cluster, j)
	c.linkJobTrace(j)
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
		c.expected = true
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

// writeJSON answers with v in the protocol's media type.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return registry.Internal(err, "encode the answer")
	}
	// A payload, result or event stored before tether refused bytes that
	// are not UTF-8 is shown with U+FFFD in their place.
	body = registry.ValidUTF8(body)
	h := w.Header()
	h.Set("Content-Type", mediaTypeOf(w))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
	return nil
}
