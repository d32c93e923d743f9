// Package agent is tether's reference agent runtime, on apiclient: it
// long-polls for jobs, acks them, runs a command for each with the job on
// stdin, heartbeats leases, reports status lines and results, batches events,
// sends ClusterHeartbeat, rotates its credential, and shuts down cleanly.
//
// The command's protocol (stdout lines; anything else is logged):
//
//	::status PHASE [MESSAGE]   post an interim status with this phase
//	::result {JSON}            the result document: outcome, error, appliedRef, output
//	::event {JSON}             an event to send (kind, resourceRef, conditions, ...)
//
// Without a ::result line, exit status 0 is outcome succeeded and anything
// else is failed, with the command's last stderr line as the error. The job
// (as JSON) is on stdin; TETHER_JOB_ID, TETHER_JOB_KIND, TETHER_JOB_ATTEMPT,
// TETHER_JOB_IDEMPOTENCY_KEY and TETHER_CLUSTER_ID are in the environment,
// and TRACEPARENT when the job was traced (the W3C trace context of its
// submission; the agent's own requests about the job send it too).
package agent

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"github.com/tetherhq/tether/internal/jwe"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tetherhq/tether/apiclient"
)

// Defaults.
const (
	DefaultPollWait          = 30 * time.Second
	DefaultHeartbeatInterval = time.Minute
	DefaultEventBatch        = 100
	DefaultEventFlush        = time.Second
	DefaultEventBuffer       = 10000
	DefaultKillGrace         = 10 * time.Second
	DefaultDrainTimeout      = 30 * time.Second
)

// Config configures an agent.
type Config struct {
	StateDir string
	// Command is run with /bin/sh -c for each job.
	Command     string
	Concurrency int // jobs at once; default 1
	// Version is reported in heartbeats.
	Version string

	PollWait          time.Duration
	HeartbeatInterval time.Duration // ClusterHeartbeat period
	EventBatch        int           // events per POST
	EventFlush        time.Duration // longest an event waits
	EventBuffer       int           // events held while tether is unreachable
	KillGrace         time.Duration // SIGTERM to SIGKILL
	DrainTimeout      time.Duration // on shutdown, how long running jobs may finish

	Retry apiclient.RetryPolicy
	// TLS: the CA tether's server certificate must chain to, and the
	// client certificate (by default the one tether's CA issued to this
	// agent, in StateDir). Ignored when HTTPClient is set.
	TLS        TLSFiles
	HTTPClient *http.Client
	Logger     *slog.Logger
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.PollWait, DefaultPollWait)
	def(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	def(&c.EventFlush, DefaultEventFlush)
	def(&c.KillGrace, DefaultKillGrace)
	def(&c.DrainTimeout, DefaultDrainTimeout)
	if c.EventBatch <= 0 {
		c.EventBatch = DefaultEventBatch
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = DefaultEventBuffer
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// DefaultCapabilities are what the reference agent negotiates unless told
// otherwise: signed writes (hmac), and a lease on every job it acks, so that
// tether reclaims the job of an agent that crashed (lease). Without lease, a
// job acked by an agent that then died stays in progress until someone
// requeues it by hand.
var DefaultCapabilities = []string{apiclient.CapabilityHMAC, apiclient.CapabilityLease}

// Register redeems a one-time token and stores the credential in stateDir.
// It returns the cluster id; the credential is never printed or logged.
// capabilities nil negotiates DefaultCapabilities; an empty, non-nil slice
// negotiates none.
func Register(ctx context.Context, server, token, stateDir string, capabilities []string, retry apiclient.RetryPolicy) (string, error) {
	return RegisterWith(ctx, server, token, stateDir, RegisterOptions{Capabilities: capabilities, Retry: retry})
}

// RegisterOptions are Register's optional parts.
type RegisterOptions struct {
	// Capabilities to negotiate: nil is DefaultCapabilities, an empty,
	// non-nil slice none.
	Capabilities []string
	Retry        apiclient.RetryPolicy
	TLS          TLSFiles
	// ClientCert says whether to ask tether's CA for a client certificate:
	// CertAuto (the default) asks, and registers without one when tether has
	// no CA; CertAlways fails then; CertNever does not ask. An agent given
	// TLS.ClientCert never asks.
	ClientCert CertRequest
	Logger     *slog.Logger
}

// CertRequest is RegisterOptions.ClientCert.
type CertRequest string

const (
	CertAuto   CertRequest = "auto"
	CertAlways CertRequest = "always"
	CertNever  CertRequest = "never"
)

// RegisterWith is Register with options: its TLS, and a client
// certificate from tether's CA (kept in stateDir, mode 0600, and used by
// the agent from then on).
func RegisterWith(ctx context.Context, server, token, stateDir string, o RegisterOptions) (string, error) {
	if err := o.TLS.check(); err != nil {
		return "", err
	}
	key, err := LoadOrCreateEncryptionKey(stateDir)
	if err != nil {
		return "", err
	}
	httpClient, _, err := newHTTPClient(o.TLS, nil)
	if err != nil {
		return "", err
	}
	if o.Capabilities == nil {
		o.Capabilities = DefaultCapabilities
	}
	opts := apiclient.RegisterOptions{
		Capabilities: o.Capabilities, Retry: o.Retry, PublicKey: []byte(key.Public().JWK()), HTTPClient: httpClient,
	}
	var certKey *ecdsa.PrivateKey
	if o.ClientCert != CertNever && !o.TLS.explicit() {
		if certKey, opts.CSR, err = newCSR(); err != nil {
			return "", err
		}
	}
	cred, err := apiclient.Register(ctx, server, token, opts)
	if apiclient.IsCode(err, apiclient.CodeNoCertificateAuthority) && o.ClientCert != CertAlways {
		// tether has no CA; the refusal left the token unused.
		if o.Logger != nil {
			o.Logger.Info("tether has no CA; registering without a client certificate")
		}
		opts.CSR, certKey = "", nil
		cred, err = apiclient.Register(ctx, server, token, opts)
	}
	if err != nil {
		return "", err
	}
	if certKey != nil && cred.ClientCertificate != "" {
		if err := saveIssued(stateDir, certKey, cred.ClientCertificate, cred.CABundle); err != nil {
			return "", fmt.Errorf("registered cluster %s, but could not store its client certificate: %w", cred.ClusterID, err)
		}
	}
	// The certificate lives in its own files (reloaded when renewed), not
	// in the credential file.
	cred.ClientCertificate, cred.CABundle = "", ""
	st := State{Server: server, Credential: cred}
	st.pinFirst(cred)
	if err := SaveState(stateDir, st); err != nil {
		return "", fmt.Errorf("registered cluster %s, but could not store its credential: %w", cred.ClusterID, err)
	}
	return cred.ClusterID, nil
}

// Agent is a running agent.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	client *apiclient.Client
	ledger *Ledger
	events *batcher
	encKey *jwe.PrivateKey // the agent's encryption key (encrypted payloads)

	// stateMu guards state, the state file's contents: the credential
	// (replaced at rotation) and the trusted signing keys (learned while
	// verifying jobs) are written by different goroutines.
	stateMu sync.Mutex
	state   State

	mu      sync.Mutex
	running map[string]bool // job ids being worked on
	health  apiclient.Condition

	server      string // tether's address, for messages
	retryMu     sync.Mutex
	retryLogged time.Time // when a retried failure was last logged
}

// New loads the agent's state and returns an agent ready to Run.
func New(cfg Config) (*Agent, error) {
	cfg.defaults()
	if cfg.Command == "" {
		return nil, errors.New("a command to run for each job is required (--exec)")
	}
	st, err := LoadState(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	ledger, err := OpenLedger(cfg.StateDir, 0)
	if err != nil {
		return nil, fmt.Errorf("read the idempotency ledger: %w", err)
	}
	a := &Agent{cfg: cfg, log: cfg.Logger.With("cluster", st.Credential.ClusterID), ledger: ledger, running: map[string]bool{}}
	// An agent registered before it had a key gets one now; an admin can
	// give its public half to tether (tether cluster edit --public-key-file).
	if a.encKey, err = LoadOrCreateEncryptionKey(cfg.StateDir); err != nil {
		return nil, fmt.Errorf("load the encryption key: %w", err)
	}
	a.server = st.Server
	st.pinFirst(st.Credential) // a state file from before key continuity
	a.state = st
	httpClient := cfg.HTTPClient
	var transport *certTransport
	if httpClient == nil {
		if err := cfg.TLS.check(); err != nil {
			return nil, err
		}
		certFile, keyFile := clientCertFiles(cfg.StateDir, cfg.TLS)
		if httpClient, transport, err = newHTTPClient(cfg.TLS, newCertFiles(certFile, keyFile, a.log)); err != nil {
			return nil, err
		}
	}
	// An agent holding a certificate tether issued renews it at every
	// rotation, with a new key.
	var pending *pendingKey
	var csr func() (string, error)
	if !cfg.TLS.explicit() && hasIssuedCert(cfg.StateDir) {
		pending = &pendingKey{}
		csr = pending.request
	}
	a.client, err = apiclient.New(apiclient.Config{
		BaseURL: st.Server, Credential: st.Credential, Retry: cfg.Retry, HTTPClient: httpClient,
		UserAgent:          "tether-agent/" + cfg.Version,
		OnRetry:            a.retrying,
		CertificateRequest: csr,
		OnRotate: func(_ context.Context, cred apiclient.Credential) error {
			if key := pending.take(); key != nil && cred.ClientCertificate != "" {
				if err := saveIssued(cfg.StateDir, key, cred.ClientCertificate, cred.CABundle); err != nil {
					return fmt.Errorf("store the renewed client certificate: %w", err)
				}
				if transport != nil {
					transport.renew() // the next requests present the new certificate, on new connections
				}
				a.log.Info("client certificate renewed")
			}
			cred.ClientCertificate, cred.CABundle = "", ""
			if err := a.saveState(func(st *State) bool {
				st.Credential = cred
				st.pinFirst(cred)
				return true
			}); err != nil {
				return err
			}
			a.log.Info("credential rotated", "expires", cred.ExpiresAt, "old_valid_until", cred.GraceUntil)
			a.emit(apiclient.Event{Kind: apiclient.EventAudit, EventKey: "credential-rotated", Message: "agent rotated its credential",
				ResourceRef: clusterRef(cred.ClusterID), Timestamp: time.Now().UTC()})
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	a.events = newBatcher(a.client, cfg.EventBatch, cfg.EventFlush, cfg.EventBuffer, a.log, st.Credential.ClusterID)
	return a, nil
}

// saveState changes the state under its lock and, when change reports a
// change, writes the state file.
func (a *Agent) saveState(change func(*State) bool) error {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	if !change(&a.state) {
		return nil
	}
	return SaveState(a.cfg.StateDir, a.state)
}

// ClusterID is the agent's cluster.
func (a *Agent) ClusterID() string { return a.client.Credential().ClusterID }

func clusterRef(id string) apiclient.ResourceRef {
	return apiclient.ResourceRef{APIVersion: "ops.vworkspace.io/v1alpha1", Kind: "Cluster", Name: id}
}

// Run works until ctx ends, then stops polling, lets running jobs finish for
// the drain timeout, stops the rest (a leased job's lease lapses and tether
// requeues it; an unleased one is reported failed so that it is not left
// stuck), flushes events, and returns. It returns early with an error when
// the credential is refused for good (apiclient.ErrUnauthenticated) or the
// cluster is forbidden.
func (a *Agent) Run(ctx context.Context) error {
	jobsCtx, stopJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopJobs()
	eventsCtx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	eventsDone := make(chan struct{})
	go func() { defer close(eventsDone); a.events.run(eventsCtx) }()
	defer func() {
		a.events.close()
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		a.events.drain(flush)
		cancel()
		stopEvents()
		<-eventsDone
	}()

	loopCtx, cancelLoops := context.WithCancel(ctx)
	defer cancelLoops()
	fatal := make(chan error, 2)
	go a.heartbeatLoop(loopCtx)
	go a.rotationLoop(loopCtx, fatal)

	slots := make(chan struct{}, a.cfg.Concurrency)
	var jobs sync.WaitGroup
	a.log.Info("agent started", "concurrency", a.cfg.Concurrency)
	err := a.pollLoop(loopCtx, jobsCtx, slots, &jobs, fatal)
	cancelLoops()

	// Drain.
	done := make(chan struct{})
	go func() { jobs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(a.cfg.DrainTimeout):
		a.log.Warn("jobs still running after the drain timeout; stopping them", "running", a.runningCount())
		stopJobs()
		<-done
	}
	a.log.Info("agent stopped")
	return err
}

func (a *Agent) runningCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.running)
}

func (a *Agent) pollLoop(ctx, jobsCtx context.Context, slots chan struct{}, jobs *sync.WaitGroup, fatal chan error) error {
	for {
		// Wait for a free slot before asking for work.
		select {
		case <-ctx.Done():
			return nil
		case err := <-fatal:
			return err
		case slots <- struct{}{}:
			<-slots
		}
		free := a.cfg.Concurrency - len(slots)
		polled, err := a.client.Poll(ctx, a.cfg.PollWait, free)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if errors.Is(err, apiclient.ErrUnauthenticated) || errors.Is(err, apiclient.ErrForbidden) {
				a.setHealth("False", "Refused", err.Error())
				a.log.Error("tether refuses this agent; stopping", "err", err)
				return err
			}
			a.log.Warn("poll failed", "err", err)
			continue
		}
		a.setHealth("True", "Polling", "")
		for _, j := range polled {
			if !a.claimSlot(j.ID) {
				continue // already working on it
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				a.releaseSlot(j.ID)
				return nil
			}
			jobs.Add(1)
			go func() {
				defer jobs.Done()
				defer func() { <-slots }()
				defer a.releaseSlot(j.ID)
				a.handle(jobsCtx, j)
			}()
		}
	}
}

func (a *Agent) claimSlot(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running[id] {
		return false
	}
	a.running[id] = true
	return true
}

func (a *Agent) releaseSlot(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.running, id)
}

func (a *Agent) setHealth(status, reason, message string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.health = apiclient.Condition{Type: "Connected", Status: status, Reason: reason, Message: message}
}

// heartbeatLoop sends ClusterHeartbeat with the agent's health conditions.
func (a *Agent) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		a.mu.Lock()
		now := time.Now().UTC()
		conds := []apiclient.Condition{
			{Type: "Ready", Status: "True", Reason: "AgentRunning", Message: fmt.Sprintf("tether agent %s, %d of %d job slots busy", a.cfg.Version, len(a.running), a.cfg.Concurrency), LastTransitionTime: &now},
		}
		if a.health.Type != "" {
			h := a.health
			h.LastTransitionTime = &now
			conds = append(conds, h)
		}
		a.mu.Unlock()
		a.events.sendNow(apiclient.HeartbeatEvent(a.ClusterID(), now, conds))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rotationLoop rotates the credential at its rotateAfter, which a forced
// rotation moves to now (the server says so with every answer, and apiclient
// signals RotateDue). A 401 on any call is handled by apiclient, which
// persists through OnRotate.
func (a *Agent) rotationLoop(ctx context.Context, fatal chan<- error) {
	for {
		due := a.client.Credential().RotateAfter
		wait := time.Until(due)
		if due.IsZero() {
			wait = 24 * time.Hour
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-a.client.RotateDue():
			t.Stop()
			continue // an admin forced a rotation: look at rotateAfter again
		case <-t.C:
		}
		if _, err := a.client.Rotate(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, apiclient.ErrUnauthenticated) || apiclient.IsCode(err, apiclient.CodeUnauthorized) {
				fatal <- fmt.Errorf("credential rotation refused: %w", err)
				return
			}
			// Seed 003: keep using the current credential and try again later.
			a.log.Warn("credential rotation failed; will retry", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Minute):
			}
		}
	}
}

// emit queues an event for the next batch.
func (a *Agent) emit(e apiclient.Event) { a.events.add(e) }

// retryLogEvery bounds how often a failure that keeps repeating is logged.
const retryLogEvery = time.Minute

// retrying says at once that tether cannot be reached (or answers with an
// error), then at most once a minute while it lasts, so that an operator
// watching the agent's log learns what is wrong without a flood.
func (a *Agent) retrying(err error, attempt int, wait time.Duration) {
	a.retryMu.Lock()
	defer a.retryMu.Unlock()
	now := time.Now()
	if attempt > 1 && now.Sub(a.retryLogged) < retryLogEvery {
		return
	}
	a.retryLogged = now
	a.log.Warn("cannot reach tether; retrying", "server", a.server, "err", err.Error(), "attempt", attempt, "next_try_in", wait.Round(time.Millisecond).String())
}
