package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/webhook"
)

// TestWebhookEndToEnd: a subscription made with the CLI, a job finished
// through the registry, and a real `tether serve` delivering it, signed, to a
// receiver on 127.0.0.1.
func TestWebhookEndToEnd(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	defer rcv.Close()

	created := okJSON[struct {
		Name   string `json:"name"`
		Secret string `json:"secret"`
	}](t, db, "webhook", "create", "--name", "billing", "--url", rcv.URL, "--events", "job.finished", "--webhook-allow-cidr", "127.0.0.0/8")
	if !strings.HasPrefix(created.Secret, "whsec_") {
		t.Fatalf("secret %q", created.Secret)
	}
	if list := ok(t, db, "webhook", "list").stdout; !strings.Contains(list, "billing") || strings.Contains(list, created.Secret) {
		t.Fatalf("webhook list:\n%s", list)
	}
	createCluster(t, db, "prod", "--namespaces", "apps")
	job := submit(t, db, "prod", "apply", configMap("apps", "hooked"))
	ok(t, db, "job", "cancel", job.ID, "--reason", "testing webhooks")

	srv, _, _ := startServe(t, db, "--webhook-allow-cidr", "127.0.0.0/8")
	deadline := time.Now().Add(waitTimeout)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivery within %s; serve's log:\n%s", waitTimeout, srv.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	req, body := got[0], bodies[0]
	mu.Unlock()
	if err := webhook.Verify(created.Secret, req.Header.Get(webhook.HeaderSignature), body, time.Now(), time.Minute); err != nil {
		t.Fatalf("delivery signature: %v", err)
	}
	var b struct {
		Event string
		Data  struct{ ID, State string }
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Event != "job.finished" || b.Data.ID != job.ID || b.Data.State != "canceled" {
		t.Fatalf("delivery body %s", body)
	}
	deadline = time.Now().Add(waitTimeout)
	for {
		out := ok(t, db, "webhook", "deliveries", "billing").stdout
		if strings.Contains(out, "delivered") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery is not recorded as delivered:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	reg := openRegistry(t, db)
	if _, ds, err := reg.WebhookDeliveries(registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "t"}), "billing", 10); err != nil || len(ds) != 1 || ds[0].Attempts != 1 {
		t.Fatalf("deliveries %+v %v", ds, err)
	}
	wantError(t, cli(t, db, "webhook", "create", "--name", "x", "--url", rcv.URL, "--events", "job.started", "--webhook-allow-cidr", "127.0.0.0/8"), exitError, "job.started")
	ok(t, db, "webhook", "delete", "billing")
}

// TestWebhookAllowCIDR: webhooks are not sent to internal addresses (all
// these tests' receivers are on 127.0.0.1) unless --webhook-allow-cidr,
// $TETHER_WEBHOOK_ALLOW_CIDR or the config file's webhook-allow-cidr
// allows the range, both when one is created on a local database and when
// serve sends it. serve's log of the refused attempt names the receiver by
// origin and fingerprint, never by the URL's path or query.
func TestWebhookAllowCIDR(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var mu sync.Mutex
	var got []string // the jobs whose outcome arrived
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Data struct{ ID string } }
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		got = append(got, b.Data.ID)
		mu.Unlock()
	}))
	defer rcv.Close()
	arrived := func(job string) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(got, job) }
	}
	hookURL := rcv.URL + "/services/T0/B0/XXsecretXX?token=s3cret"
	run := func(env []string, args ...string) result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
		defer cancel()
		cmd := command(ctx, db, args...)
		cmd.Env = append(cmd.Env, env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		return result{args: args, stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	}

	create := []string{"webhook", "create", "--name", "hook", "--url", hookURL, "--events", "job.finished"}
	wantError(t, cli(t, db, create...), exitError, "127.0.0.1 is a loopback address (127.0.0.0/8)", "--webhook-allow-cidr")
	wantError(t, cli(t, db, append(create, "--webhook-allow-cidr", "10.0.0.0/8")...), exitError, "loopback")
	wantError(t, cli(t, db, append(create, "--webhook-allow-cidr", "127.0.0.0/33")...), exitUsage, "--webhook-allow-cidr", "127.0.0.0/33")
	wantError(t, run([]string{"TETHER_ADMIN_TOKEN=tether_adm_x"}, append(create, "--server", "http://127.0.0.1:1", "--webhook-allow-cidr", "127.0.0.0/8")...),
		exitUsage, "--webhook-allow-cidr applies to a local database")
	if res := run([]string{"TETHER_WEBHOOK_ALLOW_CIDR=127.0.0.0/8"}, create...); res.code != exitOK {
		t.Fatalf("webhook create with $TETHER_WEBHOOK_ALLOW_CIDR: %s", res)
	}
	c := createCluster(t, db, "prod", "--namespaces", "apps")
	reg := openRegistry(t, db)
	admin := registry.WithActor(context.Background(), registry.Actor{Kind: registry.ActorAdmin, Name: "test"})
	finish := func() string {
		t.Helper()
		j, _, err := reg.SubmitJob(admin, registry.JobSubmission{ClusterID: c.ClusterID, Kind: registry.KindApply, Payload: json.RawMessage(configMap("apps", "hooked"))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reg.CancelJob(admin, j.ID, "webhook test"); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}

	// serve without the allow list refuses to connect.
	srv, _, _ := startServe(t, db)
	refused := finish()
	line := srv.waitLine(t, "webhook delivery attempt failed")
	srv.stop(t)
	for _, want := range []string{"refused to connect", "loopback", "receiver=" + rcv.URL} {
		if !strings.Contains(line, want) {
			t.Errorf("serve's log line %q does not say %q", line, want)
		}
	}
	for _, leak := range []string{"secret", "token", "/services"} {
		if strings.Contains(srv.log(), leak) {
			t.Errorf("serve's log shows the URL's %q:\n%s", leak, srv.log())
		}
	}
	if arrived(refused)() {
		t.Fatal("a delivery reached 127.0.0.1 without --webhook-allow-cidr")
	}

	// The flag, the variable and the config file each allow it.
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\nwebhook-allow-cidr:\n  - 10.0.0.0/8\n  - 127.0.0.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, how := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--listen", "127.0.0.1:0", "--webhook-allow-cidr", "10.0.0.0/8", "--webhook-allow-cidr", "127.0.0.0/8"}},
		{[]string{"TETHER_WEBHOOK_ALLOW_CIDR=10.0.0.0/8,127.0.0.0/8"}, []string{"--listen", "127.0.0.1:0"}},
		{nil, []string{"--config", cfg}},
	} {
		srv, _, _ := startServeEnv(t, db, how.env, how.args...)
		eventually(t, fmt.Sprintf("a delivery from serve %s %s", how.env, how.args), arrived(finish()))
		srv.stop(t)
	}
	wantError(t, run([]string{"TETHER_WEBHOOK_ALLOW_CIDR=everywhere"}, "serve", "--listen", "127.0.0.1:0"), exitUsage,
		`"everywhere" is not a CIDR prefix`, "--webhook-allow-cidr is from $TETHER_WEBHOOK_ALLOW_CIDR")
}
