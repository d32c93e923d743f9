package postgres_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/store/postgres"
)

// wantUnavailable checks err is CodeUnavailable saying what (says), and
// naming neither the server's address nor the database.
func wantUnavailable(t *testing.T, doing string, err error, dsn, says string) {
	t.Helper()
	if registry.ErrorCode(err) != registry.CodeUnavailable {
		t.Fatalf("%s: %v (code %q), want unavailable", doing, err, registry.ErrorCode(err))
	}
	msg := registry.ErrorMessage(err)
	if !strings.Contains(msg, says) {
		t.Fatalf("%s: message %q does not say %q", doing, msg, says)
	}
	u, _ := url.Parse(dsn)
	for _, where := range []string{u.Host, u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"), "postgres://"} {
		if where != "" && strings.Contains(msg, where) {
			t.Fatalf("%s: message %q says where the database is (%q)", doing, msg, where)
		}
	}
}

// TestUnavailableClassification: the failures that pass once their cause is
// gone are unavailable with a message that says what failed; anything else
// is not.
func TestUnavailableClassification(t *testing.T) {
	for _, c := range []struct {
		err  error
		says string // "" : not unavailable
	}{
		{&pgconn.PgError{Code: "25006", Message: "cannot execute UPDATE in a read-only transaction"}, "read-only"},
		{&pgconn.PgError{Code: "53100", Message: "could not extend file: No space left on device"}, "disk is full"},
		{&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, "shutting down"},
		{&pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, "starting up"},
		{&pgconn.PgError{Code: "53300", Message: "too many clients"}, "no connection to spare"},
		{&pgconn.PgError{Code: "08006", Message: "connection failure"}, "connection to the database failed"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, "cannot be reached"},
		{io.ErrUnexpectedEOF, "cannot be reached"},
		{&pgconn.PgError{Code: "23505"}, ""},
		{&pgconn.PgError{Code: "42P01", Message: "relation does not exist"}, ""},
		{errors.New("something else"), ""},
	} {
		got := postgres.Unavailable(c.err)
		if (got == "") != (c.says == "") || !strings.Contains(got, c.says) {
			t.Errorf("%v: %q, want a message saying %q", c.err, got, c.says)
		}
	}
}

// TestReadOnlyDatabase: a database that refuses writes (a standby, here one
// whose sessions default to read-only transactions) opens when its schema is
// current, serves reads, and fails writes and the write probe as
// unavailable.
func TestReadOnlyDatabase(t *testing.T) {
	dsn := freshSchema(t)
	st := openAt(t, dsn)
	reg := newRegistry(t, st, filepath.Join(t.TempDir(), "tether.key"))
	if _, _, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "prod"}, 0); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Skip("the DSN is not a URL")
	}
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	ro, err := postgres.Open(adminCtx, u.String(), postgres.Options{})
	if err != nil {
		t.Fatalf("Open of a read-only database whose schema is current: %v", err)
	}
	defer ro.Close()
	wantUnavailable(t, "CheckWritable", ro.CheckWritable(adminCtx), dsn, "read-only")
	roReg := newRegistry(t, ro, filepath.Join(t.TempDir(), "tether.key"))
	_, _, err = roReg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "other"}, 0)
	wantUnavailable(t, "a write", err, dsn, "read-only")
	if _, err := roReg.GetCluster(adminCtx, "prod"); err != nil {
		t.Fatalf("a read: %v", err)
	}
}

// TestDatabaseDown: with PostgreSQL unreachable (a proxy in front of it
// stops), writes and the write probe fail as unavailable without saying
// where the database is; once it is back, they succeed on the same store.
func TestDatabaseDown(t *testing.T) {
	dsn := freshSchema(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Skip("the DSN is not a URL")
	}
	p := startProxy(t, u.Host)
	viaProxy := *u
	viaProxy.Host = p.addr
	q := viaProxy.Query()
	q.Set("connect_timeout", "5")
	viaProxy.RawQuery = q.Encode()
	st := openAt(t, viaProxy.String())
	reg := newRegistry(t, st, filepath.Join(t.TempDir(), "tether.key"))
	if _, _, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "before"}, 0); err != nil {
		t.Fatal(err)
	}
	if err := st.CheckWritable(adminCtx); err != nil {
		t.Fatalf("CheckWritable: %v", err)
	}

	p.stop()
	wantUnavailable(t, "CheckWritable", st.CheckWritable(adminCtx), viaProxy.String(), "")
	for i := range 3 {
		_, _, err := reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "during"}, 0)
		wantUnavailable(t, fmt.Sprintf("write #%d", i+1), err, viaProxy.String(), "")
	}

	p.start(t)
	// The pool drops connections the outage broke as it meets them: a
	// bounded number of attempts, no waiting.
	var lastErr error
	for range 20 {
		if _, _, lastErr = reg.CreateCluster(adminCtx, registry.ClusterSpec{Name: "after"}, 0); lastErr == nil {
			break
		}
		wantUnavailable(t, "a write while the pool reconnects", lastErr, viaProxy.String(), "")
	}
	if lastErr != nil {
		t.Fatalf("writes did not recover once the database was back: %v", lastErr)
	}
	if err := st.CheckWritable(adminCtx); err != nil {
		t.Fatalf("CheckWritable once the database is back: %v", err)
	}
}

// proxy forwards TCP connections to PostgreSQL until stopped, on one address
// that it can take again.
type proxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
	wg           sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) start(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.ln != ln { // stopped while this one connected: it is gone too
				p.mu.Unlock()
				c.Close()
				s.Close()
				return
			}
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Go(func() { io.Copy(s, c); s.Close() })
			p.wg.Go(func() { io.Copy(c, s); c.Close() })
		}
	})
}

// stop closes the listener and every connection: the server is gone.
func (p *proxy) stop() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
