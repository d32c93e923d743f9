// Package webhook sends the registry's webhook deliveries: it claims due
// deliveries from the store's outbox, POSTs each one signed with its
// subscription's secret, and records how it went. Deliveries are at least
// once: a sender that dies mid-send leaves its claim to run out, and the
// delivery is sent again (receivers de-duplicate on X-Tether-Delivery).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tetherhq/tether/internal/buildinfo"
	"github.com/tetherhq/tether/registry"
)

// Headers of a delivery.
const (
	HeaderSignature = "X-Tether-Signature" // t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>
	HeaderDelivery  = "X-Tether-Delivery"  // wd-<n>: the same on every attempt of one delivery
	HeaderEvent     = "X-Tether-Event"
)

// Config tunes a Sender. Zero values take the defaults.
type Config struct {
	Interval    time.Duration // how often to look for due deliveries (default 1 s)
	Timeout     time.Duration // per attempt (default 10 s)
	Concurrency int           // attempts in flight at once (default 8)
	Client      *http.Client  // default: one with Timeout and no redirects
	// Report, when set, is told the outcome of every attempt.
	Report func(event string, status int, err error)
}

// Sender delivers webhooks.
type Sender struct {
	reg *registry.Registry
	cfg Config
}

// New returns a sender over reg.
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
	if cfg.Client == nil {
		cfg.Client = &http.Client{
			Timeout: cfg.Timeout,
			// A receiver's redirect is a misconfiguration to see, not to follow
			// (following would also send the signature elsewhere).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return &Sender{reg: reg, cfg: cfg}
}

// Body is what a receiver gets.
type Body struct {
	ID        string          `json:"id"` // the delivery id, as in X-Tether-Delivery
	Event     string          `json:"event"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// Sign computes a delivery's signature header value.
func Sign(secret string, at time.Time, body []byte) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify checks a signature header against the body and secret, accepting
// timestamps within tolerance of now. Receivers written in Go can use it.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return fmt.Errorf("signature header %q is not t=<unix>,v1=<hex>", header)
	}
	at := time.Unix(n, 0)
	if d := now.Sub(at); d > tolerance || d < -tolerance {
		return fmt.Errorf("signature timestamp %s is outside the %s tolerance", at.UTC().Format(time.RFC3339), tolerance)
	}
	want := Sign(secret, at, body)
	if !hmac.Equal([]byte(want), []byte("t="+ts+",v1="+sig)) {
		return fmt.Errorf("signature does not match the body")
	}
	return nil
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
	body, _ := json.Marshal(Body{ID: d.DeliveryID(), Event: d.Event, CreatedAt: d.CreatedAt, Data: d.Data})
	status, err := s.post(ctx, d, body)
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
		s.cfg.Report(d.Event, status, err)
	}
	// Recorded even if the caller's context ended mid-way: the attempt
	// happened.
	_ = s.reg.RecordWebhookAttempt(context.WithoutCancel(ctx), d, status, errText)
}

func (s *Sender) post(ctx context.Context, d *registry.DueDelivery, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "tether-webhook/"+buildinfo.Get().Version)
	req.Header.Set(HeaderSignature, Sign(d.Secret.Reveal(), time.Now(), body))
	req.Header.Set(HeaderDelivery, d.DeliveryID())
	req.Header.Set(HeaderEvent, d.Event)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("could not reach %s: %v", req.URL.Redacted(), unwrapURLError(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

func unwrapURLError(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && u.Unwrap() != nil {
		return u.Unwrap()
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
