// Package webhook sends the registry's webhook deliveries: it claims due
// deliveries from the store's outbox, POSTs each one signed with its
// subscription's secret, and records how it went. Deliveries are at least
// once: a sender that dies mid-send leaves its claim to run out, and the
// delivery is sent again (receivers de-duplicate on webhook-id).
//
// Deliveries are signed as Standard Webhooks (standardwebhooks.com) sign
// them, so that its libraries verify them in any language, and, for one
// release more, as tether signed them before (X-Tether-Signature).
package webhook

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
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tetherhq/tether/internal/buildinfo"
	"github.com/tetherhq/tether/registry"
)

// Headers of a delivery: Standard Webhooks' three, and tether's own.
const (
	// HeaderID is the message's id, wd-<n>: the same on every attempt of
	// one delivery and on an admin's redelivery of it (receivers
	// de-duplicate on it).
	HeaderID = "webhook-id"
	// HeaderTimestamp is this attempt's time, in Unix seconds.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderStandardSignature is "v1,<base64 HMAC-SHA256(key, id + "." +
	// timestamp + "." + body)>" for each secret that signs (two during a
	// rotation's overlap), separated by spaces; key is the base64 after
	// the secret's whsec_.
	HeaderStandardSignature = "webhook-signature"

	// HeaderSignature is tether's own signature, deprecated for
	// HeaderStandardSignature and sent for one release more:
	// t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>, keyed with the
	// whole secret text, with one v1 per secret that signs.
	HeaderSignature = "X-Tether-Signature"
	HeaderDelivery  = "X-Tether-Delivery" // as webhook-id
	HeaderEvent     = "X-Tether-Event"
)

// Config tunes a Sender. Zero values take the defaults.
type Config struct {
	Interval    time.Duration // how often to look for due deliveries (default 1 s)
	Timeout     time.Duration // per attempt (default 10 s)
	Concurrency int           // attempts in flight at once (default 8)
	// Resolver looks receivers' names up (nil: the system's). Tests point
	// it at a DNS server of their own.
	Resolver *net.Resolver
	// Report, when set, is told the outcome of every attempt. It is called
	// from several goroutines at once.
	Report func(Attempt)
}

// Attempt is the outcome of one attempt, for Config.Report. It holds
// nothing of the URL but its origin and fingerprint: the path and query
// often carry the receiver's own secret.
type Attempt struct {
	Event       string
	Webhook     string // the subscription's id
	WebhookName string
	Delivery    string // wd-<n>
	Message     string // webhook-id: Delivery, or for a redelivery the delivery first sent
	Receiver    string // scheme://host[:port]
	Status      int    // the receiver's HTTP status; 0 when none came
	// Err is why no HTTP answer came, in the coarse words recorded with the
	// delivery; Detail is the network's own, for the server's log only.
	Err    error
	Detail string
}

// Sender delivers webhooks.
type Sender struct {
	reg    *registry.Registry
	cfg    Config
	client *http.Client
}

// New returns a sender over reg. It sends only to the destinations reg
// allows (registry.Registry.CheckWebhookDestination), checked on the
// address of every connection it makes.
func New(reg *registry.Registry, cfg Config) *Sender {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	dialer := &net.Dialer{
		Timeout:   cfg.Timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  cfg.Resolver,
		// Control sees the address each connection goes to, after the name
		// was resolved: a name that pointed outward when the webhook was
		// created and points inward now (DNS rebinding) is refused here.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			return reg.CheckWebhookDestination(ap.Addr())
		},
	}
	client := &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{
			// No proxy, whatever HTTPS_PROXY says: the destination check
			// would see only the proxy's address, and the proxy would
			// connect wherever the URL points.
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   cfg.Timeout,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		// A receiver's redirect is a misconfiguration to see, not to follow
		// (following would also send the signature elsewhere).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Sender{reg: reg, cfg: cfg, client: client}
}

// Body is what a receiver gets.
type Body struct {
	ID        string          `json:"id"` // the message id, as in webhook-id
	Event     string          `json:"event"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// Sign computes a delivery's X-Tether-Signature (deprecated) with one
// secret.
func Sign(secret string, at time.Time, body []byte) string {
	return signLegacy([]string{secret}, at, body)
}

// signLegacy is X-Tether-Signature with a v1 for each secret, as Stripe
// lists several.
func signLegacy(secrets []string, at time.Time, body []byte) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	h := "t=" + ts
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts + "." + string(body)))
		h += ",v1=" + hex.EncodeToString(mac.Sum(nil))
	}
	return h
}

// StandardKey is the HMAC key of a whsec_ secret, as the Standard Webhooks
// libraries read it: the standard base64 after the prefix.
func StandardKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, errors.New("the webhook secret is not whsec_ and standard base64")
	}
	return key, nil
}

// SignStandard computes webhook-signature: a "v1,<base64>" for each
// secret, separated by spaces.
func SignStandard(secrets []string, msgID string, at time.Time, body []byte) (string, error) {
	var sigs []string
	for _, secret := range secrets {
		key, err := StandardKey(secret)
		if err != nil {
			return "", err
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(msgID + "." + strconv.FormatInt(at.Unix(), 10) + "."))
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}

// Verify checks an X-Tether-Signature header (deprecated: receivers verify
// webhook-signature with a Standard Webhooks library) against the body and
// secret, accepting timestamps within tolerance of now and any of the
// header's v1 values (a rotation's overlap carries two).
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("signature header %q is not t=<unix>,v1=<hex>", header)
	}
	at := time.Unix(n, 0)
	if d := now.Sub(at); d > tolerance || d < -tolerance {
		return fmt.Errorf("signature timestamp %s is outside the %s tolerance", at.UTC().Format(time.RFC3339), tolerance)
	}
	_, want, _ := strings.Cut(Sign(secret, at, body), ",v1=")
	for _, sig := range sigs {
		if hmac.Equal([]byte(want), []byte(sig)) {
			return nil
		}
	}
	return fmt.Errorf("signature does not match the body")
}

// RunOnce sends every delivery due now (in batches) and returns how many
// attempts it made.
func (s *Sender) RunOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		// The claim outlives the whole batch, sent Concurrency at a time
		// with each attempt taking up to Timeout, so that a slow attempt
		// late in the batch is not taken over (and sent twice) while it
		// waits or runs.
		const waves = 4
		hold := (waves+1)*s.cfg.Timeout + 10*time.Second
		due, err := s.reg.ClaimWebhookDeliveries(ctx, s.cfg.Concurrency*waves, hold)
		if err != nil || len(due) == 0 {
			return total, err
		}
		sem := make(chan struct{}, s.cfg.Concurrency)
		var wg sync.WaitGroup
		for i := range due {
			d := &due[i]
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				s.send(ctx, d)
			}()
		}
		wg.Wait()
		total += len(due)
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}

func (s *Sender) send(ctx context.Context, d *registry.DueDelivery) {
	body, _ := json.Marshal(Body{ID: d.MessageID(), Event: d.Event, CreatedAt: d.MessageCreatedAt(), Data: d.Data})
	status, detail, err := s.post(ctx, d, body)
	if ctx.Err() != nil {
		return // shutting down: the claim runs out and another attempt follows
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	} else if status < 200 || status > 299 {
		errText = fmt.Sprintf("the receiver answered %d", status)
	}
	if s.cfg.Report != nil {
		s.cfg.Report(Attempt{Event: d.Event, Webhook: d.WebhookID, WebhookName: d.Name, Delivery: d.DeliveryID(), Message: d.MessageID(),
			Receiver: registry.WebhookURLOrigin(d.URL),
			Status:   status, Err: err, Detail: detail})
	}
	// Recorded even if the caller's context ended mid-way: the attempt
	// happened.
	_ = s.reg.RecordWebhookAttempt(context.WithoutCancel(ctx), d, status, errText)
}

// post makes one attempt. When no HTTP answer came, err says why in coarse
// words and detail in the network's own (errorReason).
func (s *Sender) post(ctx context.Context, d *registry.DueDelivery, body []byte) (status int, detail string, err error) {
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				connected.Store(true)
			}
		},
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err.Error(), errors.New("the URL cannot be requested")
	}
	// The receiver checks the timestamp against its own clock: the real
	// one, whatever clock the registry runs on.
	now := time.Now()
	secrets := []string{d.Secret.Reveal()}
	if d.Previous != "" {
		secrets = append(secrets, d.Previous.Reveal())
	}
	standard, err := SignStandard(secrets, d.MessageID(), now, body)
	if err != nil {
		return 0, err.Error(), errors.New("the webhook's secret cannot sign (rotate it: tether webhook rotate-secret)")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tether-webhook/"+buildinfo.Get().Version)
	req.Header.Set(HeaderID, d.MessageID())
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderStandardSignature, standard)
	req.Header.Set(HeaderSignature, signLegacy(secrets, now, body))
	req.Header.Set(HeaderDelivery, d.MessageID())
	req.Header.Set(HeaderEvent, d.Event)
	resp, err := s.client.Do(req)
	if err != nil {
		detail := unwrapURLError(err).Error()
		if p := req.URL.RequestURI(); p != "/" {
			detail = strings.ReplaceAll(detail, p, "/…") // never the path or query, in any error's words
		}
		return 0, detail, errorReason(err, connected.Load(), s.cfg.Timeout)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, "", nil
}

// errorReason puts why an attempt got no HTTP answer in a few coarse words.
// They are recorded with the delivery, where every admin of the webhook
// reads them, organization-scoped ones included. The network's own words
// ("connection refused", "no route to host", a service's banner in
// "malformed HTTP response", a certificate's names) would make webhooks a
// scanner of whatever network tether sits in, and so would telling a closed
// port from a live service that does not speak HTTP (or TLS with another
// certificate, or nothing within the timeout): every attempt that reached
// no HTTP answer reads the same. serve's log has the detail for the
// operator; a name that does not resolve and a refused address keep words
// of their own, since they tell nothing about what listens where.
func errorReason(err error, connected bool, timeout time.Duration) error {
	var forbidden *registry.ForbiddenDestination
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &forbidden):
		return fmt.Errorf("refused to connect: %v", forbidden)
	case !connected && errors.As(err, &dnsErr):
		return errors.New("could not resolve the receiver's host name")
	default:
		return fmt.Errorf("no HTTP answer from the receiver: it could not be reached, did not answer HTTP, presented a TLS certificate that was not accepted, or did not answer within %s (tether serve's log has the detail)", timeout)
	}
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// Run sends due deliveries every interval until ctx ends, reporting errors
// of the store (not of receivers, which Config.Report sees) to report.
func (s *Sender) Run(ctx context.Context, report func(error)) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil && report != nil {
			report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
