// Package sshconsole serves the console over SSH (tether serve
// --ssh-listen): each session is its own console over this process's
// registry, acting as the admin identity whose public key opened it. Only
// that is served: public-key authentication, one pty session running the
// console. Passwords, keyboard-interactive, exec, shells without a pty,
// subsystems (SFTP), port and agent forwarding are refused.
package sshconsole

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"charm.land/ssh"
	"charm.land/wish/v2"
	"charm.land/wish/v2/bubbletea"
	gossh "golang.org/x/crypto/ssh"

	"github.com/tetherhq/tether/registry"
)

// Defaults of Config.
const (
	DefaultMaxSessions      = 32
	DefaultIdleTimeout      = 30 * time.Minute
	DefaultHandshakeTimeout = 20 * time.Second
	// DefaultFailuresPerMinute and DefaultFailureBurst bound failed
	// authentications per source address: a burst, then one every few
	// seconds; past that, the address's connections are closed unanswered.
	DefaultFailuresPerMinute = 10
	DefaultFailureBurst      = 10
	// maxAuthTries bounds the keys one connection may offer.
	maxAuthTries = 6
	// maxEnv bounds the environment variables a session may send.
	maxEnv = 32
)

// Config is what Server serves.
type Config struct {
	// Registry is the console's registry; every action goes through it.
	Registry *registry.Registry
	// HostKey is the key the server presents (registry.SSHHostSigner, or
	// the one brought with --ssh-host-key-file).
	HostKey gossh.Signer
	// MaxSessions bounds open console sessions (default DefaultMaxSessions);
	// connections still authenticating are bounded at twice that.
	MaxSessions int
	// IdleTimeout ends a session with no keystroke for this long (default
	// DefaultIdleTimeout).
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the time from connecting to being
	// authenticated (default DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// FailuresPerMinute and FailureBurst rate-limit failed authentications
	// per source address (defaults DefaultFailuresPerMinute,
	// DefaultFailureBurst).
	FailuresPerMinute float64
	FailureBurst      int
	// ServerURL is the agent API's URL, for the register commands the
	// console shows with new tokens.
	ServerURL string
	// Logger receives one line per session and per refusal.
	Logger *slog.Logger
	// Now is the clock idle time is measured with (default time.Now).
	Now func() time.Time
}

// Server serves the console over SSH.
type Server struct {
	cfg     Config
	ssh     *ssh.Server
	log     *slog.Logger
	metrics *metrics
	limits  *failureLimiter

	mu sync.Mutex
	// sessions are the open consoles by their SSH session (not the
	// connection's context, which the sessions of one multiplexed
	// connection share).
	sessions map[ssh.Session]*session
	conns    int
	draining bool
	// connsByAddr holds the open connections, by remote address.
	connsByAddr map[string]*connState
}

// connState is what the server follows of one connection (under
// Server.mu).
type connState struct {
	conn net.Conn
	// tried: it asked to authenticate (any method, even "none"), so that
	// failed charges only attempts (and timeouts).
	tried bool
	// channels are its open session channels; quietSince, when it last
	// had none (or authenticated): a connection without a console for
	// HandshakeTimeout is closed (watchConn).
	channels   int
	quietSince time.Time
}

type connStateKey struct{}

// New returns a server of cfg; Serve starts it.
func New(cfg Config) (*Server, error) {
	if cfg.Registry == nil || cfg.HostKey == nil {
		return nil, errors.New("sshconsole: a registry and a host key are required")
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.FailuresPerMinute <= 0 {
		cfg.FailuresPerMinute = DefaultFailuresPerMinute
	}
	if cfg.FailureBurst <= 0 {
		cfg.FailureBurst = DefaultFailureBurst
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger.With("component", "ssh"), metrics: newMetrics(),
		limits:   newFailureLimiter(cfg.FailuresPerMinute, cfg.FailureBurst, cfg.Now),
		sessions: map[ssh.Session]*session{}, connsByAddr: map[string]*connState{},
	}
	srv, err := wish.NewServer(
		// The host key first: without one wish would generate and write
		// a key file of its own.
		func(srv *ssh.Server) error { srv.AddHostKey(cfg.HostKey); return nil },
		wish.WithPublicKeyAuth(s.publicKey),
		// The last middleware runs first: admit decides whether a session
		// gets a console at all, then the Bubble Tea middleware runs it.
		wish.WithMiddleware(bubbletea.MiddlewareWithProgramHandler(s.program), s.admit),
	)
	if err != nil {
		return nil, err
	}
	srv.Version = "tether"
	srv.HandshakeTimeout = cfg.HandshakeTimeout
	srv.ConnCallback = s.connect
	srv.ConnectionFailedCallback = s.failed
	srv.ConnectionCloseCallback = s.connClosed
	srv.SessionRequestCallback = s.sessionRequest
	srv.ServerConfigCallback = func(ssh.Context) *gossh.ServerConfig {
		return &gossh.ServerConfig{MaxAuthTries: maxAuthTries, AuthLogCallback: s.authAttempt}
	}
	srv.ChannelHandlers = map[string]ssh.ChannelHandler{"session": s.sessionChannel}
	srv.RequestHandlers = map[string]ssh.RequestHandler{}
	srv.SubsystemHandlers = map[string]ssh.SubsystemHandler{}
	// No password, keyboard-interactive or forwarding handlers: the
	// server offers public-key authentication alone, and refuses the rest.
	srv.PasswordHandler, srv.KeyboardInteractiveHandler = nil, nil
	srv.LocalPortForwardingCallback, srv.ReversePortForwardingCallback = nil, nil
	s.ssh = srv
	return s, nil
}

// Serve accepts connections on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	err := s.ssh.Serve(l)
	if errors.Is(err, ssh.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown refuses new connections and sessions, ends the open sessions
// with a message saying why, waits until each has said it (or ctx ends),
// then closes every connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	for _, ss := range s.sessions {
		ss.end(errShuttingDown)
	}
	s.mu.Unlock()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for s.Sessions() > 0 && err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
		}
	}
	if cerr := s.ssh.Close(); err == nil && cerr != nil && !errors.Is(cerr, ssh.ErrServerClosed) {
		err = cerr
	}
	return err
}

// Sessions is how many console sessions are open.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// connect admits a TCP connection: refused unanswered when its address has
// failed too often, or when too many connections are open.
func (s *Server) connect(ctx ssh.Context, c net.Conn) net.Conn {
	addr := hostOf(c.RemoteAddr())
	if !s.limits.allowed(addr) {
		s.metrics.refused.WithLabelValues("rate_limited").Inc()
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || s.conns >= 2*s.cfg.MaxSessions {
		s.metrics.refused.WithLabelValues("too_many_connections").Inc()
		return nil
	}
	s.conns++
	st := &connState{conn: c, quietSince: s.cfg.Now()}
	s.connsByAddr[c.RemoteAddr().String()] = st
	ctx.SetValue(connStateKey{}, st)
	go s.watchConn(ctx, st)
	return c
}

// watchConn closes the connection once it has had no console open for
// HandshakeTimeout (ssh -N, a multiplexing master left behind, a refused
// port forward): each holds one of the connection slots. Before it
// authenticates, the handshake timeout closes it as well.
func (s *Server) watchConn(ctx ssh.Context, st *connState) {
	tick := time.NewTicker(min(s.cfg.HandshakeTimeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		quiet := st.channels == 0 && s.cfg.Now().Sub(st.quietSince) >= s.cfg.HandshakeTimeout
		s.mu.Unlock()
		if quiet {
			s.log.Info("ssh: closed a connection without a console", "remote", hostOf(st.conn.RemoteAddr()))
			_ = st.conn.Close()
			return
		}
	}
}

// channel counts a session channel of the connection of ctx opening (+1)
// or closing (-1).
func (s *Server) channel(ctx ssh.Context, delta int) {
	st, ok := ctx.Value(connStateKey{}).(*connState)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.channels += delta
	if st.channels == 0 {
		st.quietSince = s.cfg.Now()
	}
}

func (s *Server) connClosed(c net.Conn) {
	s.mu.Lock()
	s.conns--
	delete(s.connsByAddr, c.RemoteAddr().String())
	s.mu.Unlock()
}

// authAttempt notes that the connection asked to authenticate.
func (s *Server) authAttempt(c gossh.ConnMetadata, _ string, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.connsByAddr[c.RemoteAddr().String()]; ok {
		st.tried = true
	}
}

// failed charges a connection that never authenticated to its address,
// when it tried to (an unknown key, a refused method) or held its
// handshake until the timeout. One that left before asking to
// authenticate (a client refusing the host key, a TCP probe) cost nothing
// and is not charged: a person answering "no" to an unknown host key, or
// a health check, must not lock their address out.
func (s *Server) failed(c net.Conn, err error) {
	addr := hostOf(c.RemoteAddr())
	s.mu.Lock()
	st := s.connsByAddr[c.RemoteAddr().String()]
	tried := st != nil && st.tried
	s.mu.Unlock()
	var ne net.Error
	if !tried && !(errors.As(err, &ne) && ne.Timeout()) {
		s.log.Debug("ssh: connection left before authenticating", "remote", addr, "err", err)
		return
	}
	s.metrics.authFailures.Inc()
	s.limits.fail(addr)
	s.log.Info("ssh: connection refused before a session", "remote", addr, "err", err)
}

// publicKey accepts a key a live admin identity holds. The session checks
// again with the key that actually signed (ssh.Session.PublicKey).
func (s *Server) publicKey(ctx ssh.Context, key ssh.PublicKey) bool {
	if !s.limits.allowed(hostOf(ctx.RemoteAddr())) {
		return false
	}
	_, err := s.cfg.Registry.AuthenticateSSHKey(ctx, key.Marshal())
	if err == nil {
		// Authenticated (or about to be): the time to open a console
		// starts now.
		if st, ok := ctx.Value(connStateKey{}).(*connState); ok {
			s.mu.Lock()
			st.quietSince = s.cfg.Now()
			s.mu.Unlock()
		}
	}
	return err == nil
}

// sessionRequest allows the one thing served: a shell request on a
// session with a pty, which runs the console. exec (ssh host ls),
// subsystems (SFTP) and pty-less shells are refused.
func (s *Server) sessionRequest(sess ssh.Session, requestType string) bool {
	_, _, pty := sess.Pty()
	if requestType == "shell" && pty {
		return true
	}
	s.metrics.refused.WithLabelValues("not_a_console").Inc()
	s.log.Info("ssh: refused a session request", "remote", hostOf(sess.RemoteAddr()), "user", sess.User(), "request", requestType, "pty", pty)
	return false
}

func hostOf(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

var errShuttingDown = errors.New("tether is shutting down: this console session ends. Connect again to reach a running replica")

// endMessage is what a session's end says to its person.
func endMessage(cause error) string {
	switch {
	case cause == nil:
		return ""
	case errors.Is(cause, errShuttingDown), errors.Is(cause, errIdle):
		return cause.Error()
	case registry.ErrorCode(cause) == registry.CodeUnauthorized:
		return "Your admin identity no longer opens the console (revoked, expired or its SSH key removed): this session ends."
	}
	return fmt.Sprintf("This console session ends: %s", registry.ErrorMessage(cause))
}
