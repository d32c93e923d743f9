package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/store/sqlite"
	"github.com/tetherhq/tether/webhook"
)

// receiver is a real HTTP endpoint on 127.0.0.1 that answers each request
// with the next status of its script (the last one repeats); -1 hangs past
// the sender's timeout.
type receiver struct {
	mu     sync.Mutex
	script []int
	got    []received
	srv    *httptest.Server
}

type received struct {
	delivery, event, signature string
	body                       []byte
}

func newReceiver(t *testing.T, script ...int) *receiver {
	r := &receiver{script: script}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Get(webhook.HeaderDelivery), req.Header.Get(webhook.HeaderEvent), req.Header.Get(webhook.HeaderSignature), body})
		status := r.script[0]
		if len(r.script) > 1 {
			r.script = r.script[1:]
		}
		r.mu.Unlock()
		if status < 0 {
			select {
			case <-req.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

type fixture struct {
	path  string
	clock *clocktest.Clock
	st    *sqlite.Store
	reg   *registry.Registry
	ctx   context.Context
}

// loopback is what the tests' receivers, all on 127.0.0.1, need allowed:
// webhooks are not sent to loopback addresses otherwise.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// open is a registry on path that sends webhooks to loopback receivers.
func open(t *testing.T, path string, clock *clocktest.Clock) *fixture {
	t.Helper()
	return openAllowing(t, path, clock, loopback)
}

// openAllowing is a registry on path whose --webhook-allow-cidr is allow.
func openAllowing(t *testing.T, path string, clock *clocktest.Clock, allow []netip.Prefix) *fixture {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(st, registry.Config{Clock: clock, Keyring: registry.NewKeyFile(registry.KeyFilePath(path)), WebhookAllow: allow})
	f := &fixture{path: path, clock: clock, st: st, reg: reg,
		ctx: registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})}
	t.Cleanup(f.close)
	return f
}

func (f *fixture) close() {
	f.reg.Close()
	f.st.Close()
}

// finishJob creates a cluster (once) and a job, and cancels it: one
// job.finished delivery per subscription.
func (f *fixture) finishJob(t *testing.T) string {
	t.Helper()
	c, err := f.reg.GetCluster(f.ctx, "prod")
	if err != nil {
		c, _, err = f.reg.CreateCluster(f.ctx, registry.ClusterSpec{Name: "prod", AllowedNamespaces: []string{"*"}, Policy: registry.DefaultPolicy()}, 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	j, _, err := f.reg.SubmitJob(f.ctx, registry.JobSubmission{ClusterID: c.ID, Kind: registry.KindApply,
		Payload: json.RawMessage(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"apps"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.reg.CancelJob(f.ctx, j.ID, ""); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func TestDeliveryRetriesUntilTheReceiverRecovers(t *testing.T) {
	clock := clocktest.New()
	f := open(t, filepath.Join(t.TempDir(), "tether.db"), clock)
	rcv := newReceiver(t, 500, -1, 503, 204)
	_, secret, err := f.reg.CreateWebhook(f.ctx, "hook", rcv.srv.URL, []string{registry.WebhookJobFinished}, "")
	if err != nil {
		t.Fatal(err)
	}
	jobID := f.finishJob(t)
	var reports []int
	sender := webhook.New(f.reg, webhook.Config{Timeout: 200 * time.Millisecond, Report: func(a webhook.Attempt) { reports = append(reports, a.Status) }})

	for attempt := 1; attempt <= 4; attempt++ {
		if _, err := sender.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		clock.Advance(2 * time.Hour) // past any backoff
	}
	got := rcv.requests()
	if len(got) != 4 {
		t.Fatalf("receiver got %d requests, want 4 (500, timeout, 503, then 204)", len(got))
	}
	for _, r := range got {
		if r.delivery != got[0].delivery || r.event != "job.finished" {
			t.Fatalf("attempts carry different delivery ids or events: %+v", got)
		}
		if err := webhook.Verify(secret.Reveal(), r.signature, r.body, time.Now(), time.Minute); err != nil {
			t.Fatalf("signature does not verify: %v", err)
		}
		var body webhook.Body
		if err := json.Unmarshal(r.body, &body); err != nil || body.ID != r.delivery || body.Event != "job.finished" || !json.Valid(body.Data) {
			t.Fatalf("body %s", r.body)
		}
	}
	if err := webhook.Verify("whsec_wrong", got[0].signature, got[0].body, time.Now(), time.Minute); err == nil {
		t.Fatal("a wrong secret verifies")
	}
	_, ds, err := f.reg.WebhookDeliveries(f.ctx, "hook", 10)
	if err != nil || len(ds) != 1 || ds[0].State != registry.DeliveryDelivered || ds[0].Attempts != 4 || ds[0].SubjectID != jobID {
		t.Fatalf("delivery %+v (%v)", ds, err)
	}
	if len(reports) != 4 || reports[0] != 500 || reports[1] != 0 || reports[3] != 204 {
		t.Fatalf("reported statuses %v", reports)
	}
	// Nothing more to send.
	if n, _ := sender.RunOnce(context.Background()); n != 0 || len(rcv.requests()) != 4 {
		t.Fatalf("a delivered delivery was sent again")
	}
}

// TestDeliverySurvivesARestart: a delivery committed with its change is
// sent by a sender started later, on the reopened database.
func TestDeliverySurvivesARestart(t *testing.T) {
	clock := clocktest.New()
	path := filepath.Join(t.TempDir(), "tether.db")
	f := open(t, path, clock)
	rcv := newReceiver(t, 200)
	if _, _, err := f.reg.CreateWebhook(f.ctx, "hook", rcv.srv.URL, []string{registry.WebhookJobFinished}, ""); err != nil {
		t.Fatal(err)
	}
	f.finishJob(t)
	// Claimed by a sender that dies before sending: the claim runs out.
	if due, err := f.reg.ClaimWebhookDeliveries(f.ctx, 10, time.Minute); err != nil || len(due) != 1 {
		t.Fatalf("claim: %d %v", len(due), err)
	}
	f.close()

	g := open(t, path, clock)
	clock.Advance(time.Minute)
	if _, err := webhook.New(g.reg, webhook.Config{}).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 1 {
		t.Fatalf("receiver got %d requests after the restart, want 1", n)
	}
}

// TestClaimOutlivesTheBatch: a sender claims several deliveries at once and
// sends them Concurrency at a time. When each attempt takes the full timeout,
// the last one must still be claimed when it is sent, or another replica
// takes it over and the receiver gets it twice.
func TestClaimOutlivesTheBatch(t *testing.T) {
	clock := clocktest.New()
	f := open(t, filepath.Join(t.TempDir(), "tether.db"), clock)
	const timeout = 10 * time.Second
	var (
		mu       sync.Mutex
		requests int
		stolen   []registry.DueDelivery
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		mu.Lock()
		defer mu.Unlock()
		requests++
		// Another replica looks for due deliveries while this attempt runs.
		due, err := f.reg.ClaimWebhookDeliveries(f.ctx, 100, time.Minute)
		if err != nil {
			t.Error(err)
		}
		stolen = append(stolen, due...)
		clock.Advance(timeout) // the attempt takes the whole timeout
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	if _, _, err := f.reg.CreateWebhook(f.ctx, "hook", srv.URL, []string{registry.WebhookJobFinished}, ""); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		f.finishJob(t)
	}
	sender := webhook.New(f.reg, webhook.Config{Timeout: timeout, Concurrency: 1})
	if _, err := sender.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if requests != 4 {
		t.Fatalf("receiver got %d requests, want 4", requests)
	}
	for _, d := range stolen {
		t.Errorf("delivery %s was claimed by another sender while this one still held it", d.DeliveryID())
	}
}
