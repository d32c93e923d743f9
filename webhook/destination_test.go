package webhook_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/registry/clocktest"
	"github.com/tetherhq/tether/webhook"
)

// countingReceiver is a real HTTP receiver on 127.0.0.1 that counts what
// reached it.
func countingReceiver(t *testing.T) (*httptest.Server, func() int) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func onlyDelivery(t *testing.T, f *fixture, hook string) registry.WebhookDelivery {
	t.Helper()
	_, ds, err := f.reg.WebhookDeliveries(f.ctx, hook, 10)
	if err != nil || len(ds) != 1 {
		t.Fatalf("deliveries of %s: %+v (%v)", hook, ds, err)
	}
	return ds[0]
}

// A webhook made while 127.0.0.0/8 was allowed is not sent there by a
// sender whose registry no longer allows it (serve restarted without
// --webhook-allow-cidr): the check is made on each connection, not only at
// creation.
func TestDeliveryToAnAddressNoLongerAllowedIsRefused(t *testing.T) {
	clock := clocktest.New()
	path := filepath.Join(t.TempDir(), "tether.db")
	f := open(t, path, clock)
	rcv, received := countingReceiver(t)
	if _, _, err := f.reg.CreateWebhook(f.ctx, "hook", rcv.URL+"/hook", []string{registry.WebhookJobFinished}, ""); err != nil {
		t.Fatal(err)
	}
	f.finishJob(t)
	f.close()

	g := openAllowing(t, path, clock, nil)
	if _, err := webhook.New(g.reg, webhook.Config{}).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := received(); n != 0 {
		t.Fatalf("the receiver on 127.0.0.1 got %d requests; want none without --webhook-allow-cidr", n)
	}
	d := onlyDelivery(t, g, "hook")
	for _, want := range []string{"refused to connect", "loopback", "127.0.0.0/8", "--webhook-allow-cidr"} {
		if !strings.Contains(d.LastError, want) {
			t.Errorf("the delivery's last error %q does not say %q", d.LastError, want)
		}
	}
	if d.State != registry.DeliveryPending || d.Attempts != 1 {
		t.Errorf("delivery %+v, want pending after one attempt", d)
	}
}

// A name that resolves to a loopback address (here through a DNS server of
// the test's, answering 127.0.0.1 for every name) passes the check at
// creation, which cannot know where the name will point, and is refused
// when the sender connects: the DNS-rebinding defence.
func TestDeliveryToANameResolvingInwardIsRefused(t *testing.T) {
	clock := clocktest.New()
	path := filepath.Join(t.TempDir(), "tether.db")
	f := openAllowing(t, path, clock, nil)
	rcv, received := countingReceiver(t)
	_, port, _ := net.SplitHostPort(rcv.Listener.Addr().String())
	hookURL := "http://rebind.example:" + port + "/hook?token=s3cret"
	if _, _, err := f.reg.CreateWebhook(f.ctx, "hook", hookURL, []string{registry.WebhookJobFinished}, ""); err != nil {
		t.Fatalf("a host name was refused at creation: %v", err)
	}
	f.finishJob(t)
	resolver := fakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	var attempts []webhook.Attempt
	report := func(a webhook.Attempt) { attempts = append(attempts, a) }
	if _, err := webhook.New(f.reg, webhook.Config{Resolver: resolver, Report: report}).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := received(); n != 0 {
		t.Fatalf("the receiver got %d requests through a name resolving to 127.0.0.1; want none", n)
	}
	if d := onlyDelivery(t, f, "hook"); !strings.Contains(d.LastError, "refused to connect") || !strings.Contains(d.LastError, "loopback") {
		t.Fatalf("the delivery's last error is %q, want a refusal of a loopback address", d.LastError)
	}
	if len(attempts) != 1 || attempts[0].Receiver != "http://rebind.example:"+port {
		t.Fatalf("reported %+v, want the receiver's origin", attempts)
	}
	f.close()

	// The name does resolve: allowed, the same delivery goes through.
	g := openAllowing(t, path, clock, loopback)
	clock.Advance(2 * time.Hour)
	if _, err := webhook.New(g.reg, webhook.Config{Resolver: resolver}).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := received(); n != 1 {
		t.Fatalf("the receiver got %d requests once 127.0.0.0/8 was allowed, want 1", n)
	}
}

// What a failed attempt records, which every admin of the webhook reads
// (organization-scoped ones too), is a coarse reason: not the network's
// words, which would tell a closed port from a filtered one and name the
// service on an open one, and the same reason for a closed port as for a
// live service that does not speak HTTP (issue 28, item 4). The report for serve's log has the details, but
// never the URL's path or query.
func TestDeliveryErrorsAreCoarse(t *testing.T) {
	clock := clocktest.New()
	f := open(t, filepath.Join(t.TempDir(), "tether.db"), clock)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	banner := tcpService(t, func(c net.Conn) { _, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n")) })
	silent := tcpService(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // until the sender gives up

	const secretPath = "/services/T0000/B0000/XXXXsecretXXXX?token=s3cret"
	// A closed port, a live service that is not HTTP and one that answers
	// nothing read alike: otherwise webhooks scan ports.
	want := map[string]string{
		"closed": "no HTTP answer from the receiver",
		"banner": "no HTTP answer from the receiver",
		"silent": "no HTTP answer from the receiver",
	}
	addrs := map[string]string{"closed": closedAddr, "banner": banner, "silent": silent}
	for name, addr := range addrs {
		if _, _, err := f.reg.CreateWebhook(f.ctx, name, "http://"+addr+secretPath, []string{registry.WebhookJobFinished}, ""); err != nil {
			t.Fatal(err)
		}
	}
	f.finishJob(t)
	var mu sync.Mutex
	reports := map[string]webhook.Attempt{}
	hooks, _ := f.reg.ListWebhooks(f.ctx)
	sender := webhook.New(f.reg, webhook.Config{Timeout: 300 * time.Millisecond, Report: func(a webhook.Attempt) {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range hooks {
			if h.ID == a.Webhook {
				reports[h.Name] = a
			}
		}
	}})
	if _, err := sender.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, reason := range want {
		d := onlyDelivery(t, f, name)
		if !strings.HasPrefix(d.LastError, reason) {
			t.Errorf("%s: recorded %q, want %q", name, d.LastError, reason)
		}
		for _, leak := range []string{"SSH", "refused", "i/o timeout", "malformed", "secret", "token"} {
			if strings.Contains(d.LastError, leak) {
				t.Errorf("%s: recorded %q, which says %q", name, d.LastError, leak)
			}
		}
		a, ok := reports[name]
		if !ok {
			t.Errorf("%s: no attempt reported", name)
			continue
		}
		if a.Receiver != "http://"+addrs[name] || a.Err == nil || a.Detail == "" {
			t.Errorf("%s: reported %+v, want the origin, the reason and the details", name, a)
		}
		if strings.Contains(a.Detail, "secret") || strings.Contains(a.Detail, "token") || strings.Contains(a.Detail, "/services") {
			t.Errorf("%s: the details %q hold the URL's path or query", name, a.Detail)
		}
	}
	if d := reports["closed"].Detail; !strings.Contains(d, "connection refused") {
		t.Errorf("the details of the closed port are %q, want the network's words for serve's log", d)
	}
}

// tcpService listens on 127.0.0.1 and runs serve for each connection, then
// closes it; it returns the address.
func tcpService(t *testing.T, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// fakeDNS is a resolver asking a DNS server of the test's, on 127.0.0.1,
// that answers every A question with addr (and AAAA ones with nothing).
func fakeDNS(t *testing.T, addr netip.Addr) *net.Resolver {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n], addr); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	server := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", server)
	}}
}

// dnsAnswer answers a DNS query of one question (RFC 1035 4.1).
func dnsAnswer(q []byte, addr netip.Addr) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	end := 12
	for end < len(q) && q[end] != 0 {
		end += 1 + int(q[end])
	}
	end += 5 // the root label, QTYPE, QCLASS
	if end > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[end-4:])
	resp := append([]byte(nil), q[:end]...)
	binary.BigEndian.PutUint16(resp[2:], 0x8180) // a response, recursion desired and available, no error
	binary.BigEndian.PutUint16(resp[6:], 0)      // answers
	binary.BigEndian.PutUint16(resp[8:], 0)      // authority
	binary.BigEndian.PutUint16(resp[10:], 0)     // additional (the query's EDNS0 is dropped)
	if qtype == 1 {
		binary.BigEndian.PutUint16(resp[6:], 1)
		a := addr.As4()
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
		resp = append(resp, a[:]...)
	}
	return resp
}
