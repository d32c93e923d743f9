package apiclient

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RetryPolicy is seed 000's: 429 waits for Retry-After; 5xx and network
// errors back off exponentially with jitter, never sooner than MinBackoff.
type RetryPolicy struct {
	MinBackoff time.Duration // default 1s: never faster than once a second
	MaxBackoff time.Duration // default 60s
	// MaxAttempts bounds tries per call (0: until the context ends).
	MaxAttempts int
}

func (p *RetryPolicy) defaults() {
	if p.MinBackoff <= 0 {
		p.MinBackoff = time.Second
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = max(60*time.Second, p.MinBackoff)
	}
}

// Backoff returns the wait before retry number attempt (1-based): exponential
// from MinBackoff, capped at MaxBackoff, with full jitter in its upper half.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	p.defaults()
	d := p.MinBackoff
	for i := 1; i < attempt && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	half := d / 2
	return max(p.MinBackoff, half+rand.N(half+1))
}

// Config configures a Client.
type Config struct {
	// BaseURL is tether's address, e.g. https://tether.example:7070.
	BaseURL    string
	Credential Credential
	// HTTPClient defaults to a client with sensible timeouts; long-polls
	// extend them per request.
	HTTPClient *http.Client
	Retry      RetryPolicy
	// OnRotate is called after every rotation, with the new credential, before
	// the client uses it: persist it there. An error is returned to the caller
	// of the request that rotated.
	OnRotate  func(context.Context, Credential) error
	UserAgent string
	// OnRetry, when set, is told of every failure the client retries (the
	// server unreachable, 5xx, 429), before it waits: an agent says at once
	// what is wrong instead of retrying in silence.
	OnRetry func(err error, attempt int, wait time.Duration)
	// CertificateRequest, when set, is called before every rotation; a
	// non-empty CSR (PEM) it returns is sent with it, so the client
	// certificate is renewed with the credential (the new one is in the
	// credential OnRotate receives).
	CertificateRequest func() (string, error)
}

// Client talks to tether as one agent. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	http      *http.Client
	retry     RetryPolicy
	onRotate  func(context.Context, Credential) error
	onRetry   func(err error, attempt int, wait time.Duration)
	csr       func() (string, error)
	userAgent string

	mu       sync.RWMutex
	cred     Credential
	hmacKey  []byte
	rotateMu sync.Mutex // one rotation at a time
	// rotateDue is signalled when the server says the credential is due for
	// rotation earlier than it said at issue (an admin forced a rotation).
	rotateDue chan struct{}
}

// HeaderRotateAfter is sent by tether with every answer to a credential that
// is due for rotation (an extension): an admin forced a rotation, and the
// credential works until its grace ends.
const HeaderRotateAfter = "X-Credential-Rotate-After"

// RotateDue is signalled when the server moves the credential's rotateAfter
// earlier (a forced rotation): a rotation loop should look at
// Credential().RotateAfter again.
func (c *Client) RotateDue() <-chan struct{} { return c.rotateDue }

// noteRotateAfter takes a rotateAfter the server announced for the token in
// use.
func (c *Client) noteRotateAfter(token, value string) {
	at, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return
	}
	c.mu.Lock()
	moved := c.cred.Token == token && (c.cred.RotateAfter.IsZero() || at.Before(c.cred.RotateAfter))
	if moved {
		c.cred.RotateAfter = at
	}
	c.mu.Unlock()
	if moved {
		select {
		case c.rotateDue <- struct{}{}:
		default:
		}
	}
}

// New returns a client for an agent that already holds a credential.
func New(cfg Config) (*Client, error) {
	base, err := parseBase(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, http: cfg.HTTPClient, retry: cfg.Retry, onRotate: cfg.OnRotate, onRetry: cfg.OnRetry, csr: cfg.CertificateRequest, userAgent: cfg.UserAgent, rotateDue: make(chan struct{}, 1)}
	if c.http == nil {
		c.http = defaultHTTPClient()
	}
	if c.userAgent == "" {
		c.userAgent = "tether-apiclient/1"
	}
	c.retry.defaults()
	if err := c.setCredential(cfg.Credential); err != nil {
		return nil, err
	}
	return c, nil
}

func parseBase(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server address %q must be an http:// or https:// URL", raw)
	}
	return u, nil
}

func defaultHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // long-polls hold the response; each request has a context deadline instead
	}}
}

func (c *Client) setCredential(cred Credential) error {
	var key []byte
	if cred.HMACKey != "" {
		var err error
		if key, err = base64.RawURLEncoding.DecodeString(cred.HMACKey); err != nil {
			return fmt.Errorf("credential's hmacKey is not base64url: %w", err)
		}
	}
	c.mu.Lock()
	c.cred, c.hmacKey = cred, key
	c.mu.Unlock()
	return nil
}

// Credential returns the credential in use.
func (c *Client) Credential() Credential {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cred
}

// RegisterOptions are the optional parts of a registration.
type RegisterOptions struct {
	// ClusterIDHint is sent as clusterId; the server ignores it for
	// authorization and answers with the cluster the token is bound to.
	ClusterIDHint string
	Capabilities  []string
	// PublicKey is the agent's encryption public key, a JWK (X25519 OKP or
	// P-256 EC, never with its private member d): tether encrypts the
	// payloads of clusters that require it to this key.
	PublicKey  json.RawMessage
	HTTPClient *http.Client
	Retry      RetryPolicy
	// CSR (PEM) asks tether's CA for a client certificate
	// (Credential.ClientCertificate). A tether without a CA refuses it with
	// CodeNoCertificateAuthority; the token is not used then.
	CSR string
}

// Register redeems a one-time registration token and returns the credential
// it issues. Like the reference operator, it sends the token in both the
// Authorization header and the body.
func Register(ctx context.Context, baseURL, token string, opts RegisterOptions) (Credential, error) {
	c, err := New(Config{BaseURL: baseURL, HTTPClient: opts.HTTPClient, Retry: opts.Retry})
	if err != nil {
		return Credential{}, err
	}
	body := map[string]any{"registrationToken": token}
	if opts.ClusterIDHint != "" {
		body["clusterId"] = opts.ClusterIDHint
	}
	if len(opts.Capabilities) > 0 {
		body["capabilities"] = opts.Capabilities
	}
	if len(opts.PublicKey) > 0 {
		body["publicKey"] = opts.PublicKey
	}
	if opts.CSR != "" {
		body["csr"] = opts.CSR
	}
	var cred Credential
	err = c.do(ctx, call{method: http.MethodPost, path: "/api/agent/register", body: body, bearer: token, out: &cred, noRotate: true, unsigned: true})
	if err != nil {
		return Credential{}, err
	}
	if cred.ClusterID == "" || cred.Token == "" {
		return Credential{}, errors.New("tether's register answer lacks clusterId or token")
	}
	cred.Capabilities = opts.Capabilities
	return cred, nil
}

// SigningKeys returns the cluster's payload-signing keys (GET
// /api/agent/keys): the current key first, then the keys still inside their
// overlap after a rotation.
func (c *Client) SigningKeys(ctx context.Context) ([]JWK, error) {
	var set struct {
		Keys []JWK `json:"keys"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, path: "/api/agent/keys", out: &set}); err != nil {
		return nil, err
	}
	return set.Keys, nil
}

// Rotate exchanges the credential for a new one (the old one keeps working
// until GraceUntil), calls OnRotate, and uses the new one from then on.
func (c *Client) Rotate(ctx context.Context) (Credential, error) {
	c.rotateMu.Lock()
	defer c.rotateMu.Unlock()
	return c.rotateLocked(ctx)
}

func (c *Client) rotateLocked(ctx context.Context) (Credential, error) {
	old := c.Credential()
	var next Credential
	// Naming the capabilities this client speaks lets the rotation add one
	// the cluster's policy started requiring since registration.
	body := map[string]any{}
	if len(old.Capabilities) > 0 {
		body["capabilities"] = old.Capabilities
	}
	if c.csr != nil {
		csr, err := c.csr()
		if err != nil {
			return Credential{}, fmt.Errorf("make the certificate request for the rotation: %w", err)
		}
		if csr != "" {
			body["csr"] = csr
		}
	}
	err := c.do(ctx, call{method: http.MethodPost, path: "/api/agent/credentials/rotate", body: body, out: &next, noRotate: true})
	if err != nil {
		return Credential{}, err
	}
	if next.Token == "" {
		return Credential{}, errors.New("tether's rotate answer lacks a token")
	}
	if next.ClusterID == "" {
		next.ClusterID = old.ClusterID
	}
	next.Capabilities = old.Capabilities
	if c.onRotate != nil {
		if err := c.onRotate(ctx, next); err != nil {
			return Credential{}, fmt.Errorf("persist the rotated credential: %w", err)
		}
	}
	if err := c.setCredential(next); err != nil {
		return Credential{}, err
	}
	return next, nil
}

// Poll long-polls for the cluster's jobs: the server answers as soon as one
// is queued, or with none after wait (0: answer at once; at most 300s). It
// asks for at most limit jobs (at most 100; 0 names no limit, and tether
// then hands out one): ack each within the server's visibility window (30 s
// by default), or another poller of the cluster may receive it too.
func (c *Client) Poll(ctx context.Context, wait time.Duration, limit int) ([]Job, error) {
	q := url.Values{}
	q.Set("cluster", c.Credential().ClusterID)
	q.Set("wait", strconv.Itoa(int(wait/time.Second)))
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	err := c.do(ctx, call{method: http.MethodGet, path: "/api/agent/jobs?" + q.Encode(), out: &out, timeout: wait + 30*time.Second})
	return out.Jobs, err
}

// Ack claims a job. ErrNotClaimed: someone else has it or it is closed (do
// not run it); ErrJobGone: it does not exist.
func (c *Client) Ack(ctx context.Context, jobID string) (Claim, error) {
	var claim Claim
	err := c.do(ctx, call{method: http.MethodPost, path: jobPath(jobID, "ack"), headers: func(h http.Header) {
		claim.ClaimID = h.Get("X-Claim-Id")
		if t, err := time.Parse(time.RFC3339, h.Get("X-Lease-Expires-At")); err == nil {
			claim.LeaseExpiresAt = t
		}
	}})
	if IsCode(err, CodeAlreadyClaimed, CodeJobClosed) {
		return Claim{}, classify(ErrNotClaimed, err)
	}
	return claim, err
}

// Status reports a job's interim status (and renews its lease). claimID is
// the ack's X-Claim-Id, or "" for a client without leases.
func (c *Client) Status(ctx context.Context, jobID, claimID string, s Status) error {
	return c.do(ctx, call{method: http.MethodPost, path: jobPath(jobID, "status"), body: s, claimID: claimID})
}

// Heartbeat renews a job's lease and returns its new end (zero without a
// lease).
func (c *Client) Heartbeat(ctx context.Context, jobID, claimID string) (time.Time, error) {
	var until time.Time
	err := c.do(ctx, call{method: http.MethodPost, path: jobPath(jobID, "heartbeat"), claimID: claimID, headers: func(h http.Header) {
		until, _ = time.Parse(time.RFC3339, h.Get("X-Lease-Expires-At"))
	}})
	return until, err
}

// Result reports a job's result. As seed 000 says, a 409 meaning the result
// is already recorded (or the job closed) is success; ErrJobCanceled and
// ErrStaleClaim mean the result was not taken.
func (c *Client) Result(ctx context.Context, jobID, claimID string, r Result) error {
	err := c.do(ctx, call{method: http.MethodPost, path: jobPath(jobID, "result"), body: r, claimID: claimID})
	if IsCode(err, CodeResultAlreadyRecorded, CodeJobClosed) {
		return nil
	}
	return err
}

// Events posts a batch of 1 to 1000 events.
func (c *Client) Events(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	return c.do(ctx, call{method: http.MethodPost, path: "/api/agent/events", body: struct {
		Events []Event `json:"events"`
	}{events}})
}

func jobPath(id, action string) string {
	return "/api/agent/jobs/" + url.PathEscape(id) + "/" + action
}

// call is one API request.
type call struct {
	method   string
	path     string // with query
	body     any    // nil: no body, no Content-Type
	out      any
	bearer   string // overrides the credential (registration)
	claimID  string
	timeout  time.Duration
	headers  func(http.Header)
	noRotate bool // a 401 is final (register, rotate itself)
	unsigned bool
}

// do sends the call with the retry policy: 429 honours Retry-After, 5xx and
// network errors back off, 401 tries one rotation (only for a credential
// refused as unknown, expired or rotated: a signature refused for the clock
// or a replay is not the credential's fault), 403 and other 4xx stop.
func (c *Client) do(ctx context.Context, cl call) error {
	var body []byte
	if cl.body != nil {
		var err error
		if body, err = json.Marshal(cl.body); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	rotated := false
	for attempt := 1; ; attempt++ {
		err := c.once(ctx, cl, body)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var apiErr *Error
		retryable := false
		wait := c.retry.Backoff(attempt)
		switch {
		case !errors.As(err, &apiErr):
			retryable = true // network error
		case apiErr.StatusCode == http.StatusTooManyRequests:
			retryable = true
			wait = max(apiErr.RetryAfter, c.retry.MinBackoff)
		case apiErr.StatusCode >= 500:
			retryable = true
			wait = max(wait, apiErr.RetryAfter)
		case apiErr.Code == CodeSignatureExpired:
			return classify(ErrClockSkew, err)
		case apiErr.Code == CodeSignatureReplayed:
			// The same request signed in the same second was seen: sign it
			// again, a second later, rather than rotate a credential that is
			// fine.
			retryable = true
			wait = max(wait, time.Second)
		case apiErr.Code == CodeSignatureRequired || apiErr.Code == CodeSignatureInvalid:
			return err // a key problem, not an expired credential: rotating would not help
		case apiErr.Code == CodeClientCertificateRequired:
			return err // the connection lacks the certificate: rotating would not help
		case apiErr.StatusCode == http.StatusUnauthorized && !cl.noRotate && !rotated:
			rotated = true
			if rerr := c.rotateAfter401(ctx); rerr != nil {
				return classify(ErrUnauthenticated, err)
			}
			attempt--
			continue
		case apiErr.StatusCode == http.StatusUnauthorized && !cl.noRotate:
			return classify(ErrUnauthenticated, err)
		case apiErr.StatusCode == http.StatusForbidden:
			return classify(ErrForbidden, err)
		case apiErr.Code == CodeJobNotFound:
			return classify(ErrJobGone, err)
		case apiErr.Code == CodeJobCanceled:
			return classify(ErrJobCanceled, err)
		case apiErr.Code == CodeStaleClaim:
			return classify(ErrStaleClaim, err)
		}
		if !retryable || (c.retry.MaxAttempts > 0 && attempt >= c.retry.MaxAttempts) {
			return err
		}
		if c.onRetry != nil {
			c.onRetry(err, attempt, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// rotateAfter401 is seed 000's "attempt one credential refresh". Another
// request may have rotated already while this one was in flight: then the
// credential changed and there is nothing to do.
func (c *Client) rotateAfter401(ctx context.Context) error {
	before := c.Credential().Token
	c.rotateMu.Lock()
	defer c.rotateMu.Unlock()
	if c.Credential().Token != before {
		return nil
	}
	_, err := c.rotateLocked(ctx)
	return err
}

func classify(sentinel error, err error) error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return &classified{sentinel: sentinel, err: apiErr}
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

func (c *Client) once(ctx context.Context, cl call, body []byte) error {
	if cl.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cl.timeout)
		defer cancel()
	}
	u := c.base.String() + cl.path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, rd)
	if err != nil {
		return err
	}
	c.mu.RLock()
	token, key := c.cred.Token, c.hmacKey
	c.mu.RUnlock()
	if cl.bearer != "" {
		token = cl.bearer
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", MediaType)
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", MediaType)
	}
	if cl.claimID != "" {
		req.Header.Set("X-Claim-Id", cl.claimID)
	}
	if tp, _ := ctx.Value(traceparentKey{}).(string); tp != "" {
		req.Header.Set("traceparent", tp)
	}
	if key != nil && !cl.unsigned && cl.method == http.MethodPost {
		sign(req.Header, key, cl.method, req.URL.RequestURI(), body, time.Now())
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if v := resp.Header.Get(HeaderRotateAfter); v != "" {
		c.noteRotateAfter(token, v)
	}
	if resp.StatusCode/100 == 2 {
		if cl.headers != nil {
			cl.headers(resp.Header)
		}
		if cl.out != nil {
			if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(cl.out); err != nil {
				return fmt.Errorf("decode tether's answer to %s %s: %w", cl.method, cl.path, err)
			}
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	return readError(resp)
}

func readError(resp *http.Response) error {
	e := &Error{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id")}
	var shape struct {
		Error     string `json:"error"`
		Message   string `json:"message"`
		RequestID string `json:"requestId"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&shape) == nil {
		e.Code, e.Message = shape.Error, shape.Message
		if shape.RequestID != "" {
			e.RequestID = shape.RequestID
		}
	}
	if e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "_"))
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			e.RetryAfter = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			e.RetryAfter = time.Until(t)
		}
	}
	return e
}

// sign adds the HMAC headers of a signed write (PROTOCOL.md, "Signed writes").
func sign(h http.Header, key []byte, method, requestURI string, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	h.Set("X-Agent-Timestamp", ts)
	h.Set("X-Agent-Signature", "v1="+Signature(key, method, requestURI, ts, body))
}

// Signature is the lowercase hex HMAC-SHA256 of a write's canonical string:
// METHOD, path with raw query, timestamp and the hex SHA-256 of the body, one
// per line.
func Signature(key []byte, method, requestURI, timestamp string, body []byte) string {
	sum := sha256.Sum256(body)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(method + "\n" + requestURI + "\n" + timestamp + "\n" + hex.EncodeToString(sum[:])))
	return hex.EncodeToString(mac.Sum(nil))
}
