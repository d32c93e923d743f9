package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tetherhq/tether/apiclient"
	"github.com/tetherhq/tether/registry"
)

// serveProc is `tether serve` running in the background; its stderr (where
// it logs) is collected line by line, never blocking the server.
type serveProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	next   int           // the first line waitLine has not looked at
	more   chan struct{} // signalled when a line arrives
	exited chan struct{} // closed once the process has exited and its log is read
	code   int
}

// startServe runs the real binary's serve command on a free port and returns
// once it logged its start line, with the address it logged.
func startServe(t *testing.T, db string, args ...string) (*serveProc, string, string) {
	t.Helper()
	return startServeEnv(t, db, nil, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
}

// startServeEnv is startServe with extra environment variables (NAME=value)
// and without a --listen of its own.
func startServeEnv(t *testing.T, db string, env []string, args ...string) (*serveProc, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	t.Cleanup(cancel)
	cmd := command(ctx, db, append([]string{"serve"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start tether serve: %v", err)
	}
	p := &serveProc{cmd: cmd, more: make(chan struct{}, 1), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			select {
			case p.more <- struct{}{}:
			default:
			}
		}
		_ = cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	line := p.waitLine(t, "tether serve listening")
	// Background services start beside the listener, so a line the test
	// waits for next may already be logged above this one: look from the top.
	p.mu.Lock()
	p.next = 0
	p.mu.Unlock()
	addr := regexp.MustCompile(`"?addr"?[=:]"?([0-9.]+:[0-9]+)`).FindStringSubmatch(line)
	if addr == nil {
		t.Fatalf("start line %q names no address", line)
	}
	return p, addr[1], line
}

func (p *serveProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitLine returns the first log line not yet looked at that contains want
// and each of also (what tells it from a line like it that may come first,
// such as a retry's).
func (p *serveProc) waitLine(t *testing.T, want string, also ...string) string {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		p.mu.Lock()
		for ; p.next < len(p.lines); p.next++ {
			if line := p.lines[p.next]; strings.Contains(line, want) && containsAll(line, also) {
				p.next++
				p.mu.Unlock()
				return line
			}
		}
		p.mu.Unlock()
		select {
		case <-p.more:
		case <-p.exited:
			t.Fatalf("tether serve exited before logging %q %q; log:\n%s", want, also, p.log())
		case <-timeout:
			t.Fatalf("tether serve did not log %q %q within %s; log:\n%s", want, also, waitTimeout, p.log())
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// stop sends SIGTERM and returns the exit code and the whole log.
func (p *serveProc) stop(t *testing.T) (int, string) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(waitTimeout):
		t.Fatalf("tether serve did not exit within %s of SIGTERM", waitTimeout)
	}
	return p.code, p.log()
}

func httpGet(t *testing.T, url string, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: waitTimeout}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// scraperToken issues what the agent listener's /metrics takes: an admin
// token that no organization confines (a viewer's, as a Prometheus gets).
func scraperToken(t testing.TB, db string) string {
	t.Helper()
	return okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "prometheus", "--role", "viewer").Token
}

func TestServeStartsAndShutsDownOnSIGTERM(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	scraper := scraperToken(t, db)
	p, addr, startLine := startServe(t, db)
	if !strings.Contains(startLine, db) {
		t.Errorf("start line %q does not name the database %s", startLine, db)
	}
	base := "http://" + addr
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet(t, base+path); code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, code, body)
		}
	}

	// An agent registers and holds a long-poll; SIGTERM answers it at once
	// with an empty list, and the process exits 0.
	reg := openRegistry(t, db)
	_, tok, err := reg.CreateCluster(context.Background(), registry.ClusterSpec{Name: "c1", AllowedNamespaces: []string{"*"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/api/agent/register", "application/json", strings.NewReader(`{"registrationToken":"`+tok.Secret.Reveal()+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var cred struct{ ClusterID, Token string }
	err = json.NewDecoder(resp.Body).Decode(&cred)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("register: %d %v", resp.StatusCode, err)
	}
	polled := make(chan string, 1)
	go func() {
		code, body := httpGet(t, base+"/api/agent/jobs?cluster="+cred.ClusterID+"&wait=300", "Authorization", "Bearer "+cred.Token)
		polled <- fmt.Sprintf("%d %s", code, strings.TrimSpace(string(body)))
	}()
	eventually(t, "the long-poll to be held", func() bool {
		_, body := httpGet(t, base+"/metrics", "Authorization", "Bearer "+scraper)
		return strings.Contains(string(body), "tether_agent_longpolls_held 1")
	})
	// Every background service runs under the maintainer, which reports it.
	_, metrics := httpGet(t, base+"/metrics", "Authorization", "Bearer "+scraper)
	for _, svc := range []string{"reaper", "pruner", "retention", "search-merge", "rollouts", "signature-audit", "webhook-sender", "sighup-reload"} {
		for _, want := range []string{`tether_service_up{service="` + svc + `"} 1`, `tether_service_failures_total{service="` + svc + `"} 0`} {
			if !strings.Contains(string(metrics), want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	}
	code, log := p.stop(t)
	select {
	case got := <-polled:
		if got != `200 {"jobs":[]}` {
			t.Errorf("held poll at shutdown = %s, want 200 with an empty list", got)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the held poll was not answered at shutdown")
	}
	if code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0; log:\n%s", code, log)
	}
	// Drain the agent API, then stop the services (the store closes after).
	drained, stopped := strings.Index(log, `msg="shut down"`), strings.Index(log, `msg="background services stopped"`)
	if drained < 0 || stopped < drained {
		t.Errorf("the log does not say the services stopped after the agent API shut down:\n%s", log)
	}
	if strings.Contains(log, tok.Secret.Reveal()) || strings.Contains(log, cred.Token) {
		t.Errorf("a token reached the log:\n%s", log)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("still listening after exit")
	}
}

func TestServeJSONLogs(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	p, addr, line := startServe(t, db, "--log-format", "json")
	var start map[string]any
	if err := json.Unmarshal([]byte(line), &start); err != nil {
		t.Fatalf("start line %q is not JSON: %v", line, err)
	}
	if start["db"] != db || start["addr"] != addr || start["url"] != "http://"+addr {
		t.Errorf("start line = %v, want db %s and addr %s", start, db, addr)
	}
	httpGet(t, "http://"+addr+"/api/agent/nope")
	var req map[string]any
	if err := json.Unmarshal([]byte(p.waitLine(t, `"msg":"request"`)), &req); err != nil {
		t.Fatal(err)
	}
	if id, _ := req["request_id"].(string); !strings.HasPrefix(id, "rq-") || req["status"] != float64(404) {
		t.Errorf("request line = %v, want a request_id and status 404", req)
	}
	if code, log := p.stop(t); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, log)
	}
}

func TestServeUsageErrors(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, tc := range []struct {
		args     []string
		fragment string
	}{
		{[]string{"serve", "--tls-cert", "x.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"serve", "--tls-client-ca", "ca.pem"}, "--tls-client-ca needs"},
		{[]string{"serve", "--client-ca", "ca.pem"}, "--tls-client-ca needs"}, // the protocol notes' name
		{[]string{"serve", "--log-format", "xml"}, `--log-format "xml"`},
		{[]string{"serve", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"serve", "--rate", "-1"}, "must not be negative"},
		{[]string{"serve", "--max-polls-per-credential", "-1"}, "--max-polls-per-credential, --max-polls-per-address and --max-conns-per-address must not be negative"},
		{[]string{"serve", "extra"}, "unknown command"},
	} {
		wantError(t, cli(t, db, tc.args...), exitUsage, tc.fragment)
	}
	// An address that is not host:port is a bad flag value.
	wantError(t, cli(t, db, "serve", "--listen", "127.0.0.1"), exitUsage, `--listen "127.0.0.1" is not an address to listen on`, "host:port")
	// A port in use is a plain error, exit 1, that says what to do: the
	// newcomer's second `make run` meets it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wantError(t, cli(t, db, "serve", "--listen", ln.Addr().String()), exitError, "cannot listen on "+ln.Addr().String(),
		"another process is listening there", "choose another address with --listen (or $TETHER_LISTEN)")
	wantError(t, cli(t, db, "serve", "--listen", "127.0.0.1:0", "--diag-listen", ln.Addr().String()), exitError,
		"cannot listen on "+ln.Addr().String()+" (--diag-listen)", "with --diag-listen (or $TETHER_DIAG_LISTEN)")
}

// TestStartAgentAPI is the function the console and the demo embed: it binds
// ":0"-style addresses, serves TLS when asked, and its wait returns nil
// after ctx ends.
func TestStartAgentAPI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := writeServerCert(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := openApp(ctx, &globals{db: filepath.Join(dir, "tether.db")}, registry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var logs syncBuffer
	addr, wait, err := startAgentAPI(ctx, a, serveOptions{listen: "127.0.0.1:0", tlsCert: certFile, tlsKey: keyFile, logOutput: &logs, logFormat: "text"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("addr %s: want the bound port", addr)
	}
	client := &http.Client{Timeout: waitTimeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz over TLS = %d", resp.StatusCode)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait() = %v, want nil after a graceful shutdown", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("wait() did not return after ctx ended")
	}
	if err := wait(); err != nil { // a second call returns the same
		t.Errorf("second wait() = %v", err)
	}
	if !strings.Contains(logs.String(), "url=https://"+addr) {
		t.Errorf("start line missing or not https:\n%s", logs.String())
	}
}

// writeServerCert writes a self-signed certificate for 127.0.0.1 and its
// key, and returns their paths and a pool that trusts it.
func writeServerCert(t *testing.T, dir string) (string, string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tether test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// --diag-listen serves /metrics and pprof on a port of its own, without a
// token; the agent listener's /metrics takes an admin token that no
// organization confines, and its refusal says so.
func TestServeDiagListen(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	scraper := scraperToken(t, db)
	org := okJSON[issuedAdminToken](t, db, "admin-token", "create", "--name", "acme-ops", "--role", "admin", "--org", "acme").Token
	p, addr, _ := startServe(t, db, "--diag-listen", "127.0.0.1:0")
	code, body := httpGet(t, "http://"+addr+"/metrics")
	if code != http.StatusUnauthorized || !strings.Contains(string(body), "tether admin-token create") || !strings.Contains(string(body), "--diag-listen") {
		t.Errorf("GET /metrics on --listen without a token: %d %s, want 401 saying how to scrape", code, body)
	}
	if code, body := httpGet(t, "http://"+addr+"/metrics", "Authorization", "Bearer "+org); code != http.StatusForbidden {
		t.Errorf("GET /metrics on --listen with an organization's token: %d %s, want 403", code, body)
	}
	if code, body := httpGet(t, "http://"+addr+"/metrics", "Authorization", "Bearer "+scraper); code != http.StatusOK || !strings.Contains(string(body), "tether_build_info") {
		t.Errorf("GET /metrics on --listen with a viewer's token: %d, want 200 with the series", code)
	}
	// Logged before the start line startServe waited for.
	m := regexp.MustCompile(`diagnostics listening"? addr=([0-9.]+:[0-9]+)`).FindStringSubmatch(p.log())
	if m == nil {
		t.Fatalf("no diagnostics line with an address in the log:\n%s", p.log())
	}
	for path, want := range map[string]string{"/metrics": "tether_build_info", "/debug/pprof/": "goroutine"} {
		code, body := httpGet(t, "http://"+m[1]+path)
		if code != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s on --diag-listen: %d, want 200 with %q", path, code, want)
		}
	}
	// The command line may hold a database password (--db postgres://...):
	// the profiler does not serve it.
	if code, body := httpGet(t, "http://"+m[1]+"/debug/pprof/cmdline"); code == http.StatusOK || strings.Contains(string(body), "--db") {
		t.Errorf("GET /debug/pprof/cmdline on --diag-listen: %d %q, want it refused without the command line", code, body)
	}
	if code, log := p.stop(t); code != 0 {
		t.Errorf("exit %d\n%s", code, log)
	}
}

// TestServeVisibilityWindowZeroHidesNothing: --visibility-window 0 turns the
// window off, as -1s does: a queued job handed to one poll is offered to the
// next poll too. (The registry's zero is its 30 s default, which the flag's
// 0 used to become.)
func TestServeVisibilityWindowZeroHidesNothing(t *testing.T) {
	t.Parallel()
	for _, window := range []string{"0", "0s", "-1s"} {
		t.Run(window, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			c := createCluster(t, db, "prod", "--namespaces", "apps")
			p, addr, _ := startServe(t, db, "--visibility-window", window)
			ctx := context.Background()
			cred, err := apiclient.Register(ctx, "http://"+addr, c.RegistrationToken, apiclient.RegisterOptions{Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			client, err := apiclient.New(apiclient.Config{BaseURL: "http://" + addr, Credential: cred, Retry: apiclient.RetryPolicy{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			j := submit(t, db, "prod", "apply", configMap("apps", "one"))
			for _, poll := range []string{"first", "second"} {
				jobs, err := client.Poll(ctx, 0, 10)
				if err != nil {
					t.Fatalf("%s poll: %v\n%s", poll, err, p.log())
				}
				if len(jobs) != 1 || jobs[0].ID != j.ID {
					t.Fatalf("%s poll with --visibility-window %s: got %d jobs, want %s", poll, window, len(jobs), j.ID)
				}
			}
		})
	}
}
