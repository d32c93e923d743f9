package sshconsole

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/ssh"
	"charm.land/wish/v2/bubbletea"
	"github.com/charmbracelet/colorprofile"
	gossh "golang.org/x/crypto/ssh"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
	"github.com/tetherhq/tether/tui"
)

var errIdle = errors.New("This console session was idle too long and ends. Connect again to go on")

// session is one open console: it ends (ctx) when its identity stops
// working, it idles too long, the server shuts down, or the person quits.
type session struct {
	conn      ssh.Session
	id        registry.SSHIdentity
	ctx       context.Context
	cancel    context.CancelCauseFunc
	lastInput atomic.Int64 // UnixNano of the last keystroke, by Config.Now
}

func (ss *session) end(cause error) { ss.cancel(cause) }

// admit runs before the console: it authenticates the session again with
// the key that signed (not merely one offered), admits it within
// MaxSessions, runs the console (next), and says why it ended.
func (s *Server) admit(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		remote := hostOf(sess.RemoteAddr())
		var id registry.SSHIdentity
		var err error = errSSHNoKey
		if pk := sess.PublicKey(); pk != nil {
			id, err = s.cfg.Registry.AuthenticateSSHKey(sess.Context(), pk.Marshal())
		}
		if err != nil {
			s.metrics.refused.WithLabelValues("unauthorized").Inc()
			s.log.Info("ssh: session refused", "remote", remote, "err", err)
			refuse(sess, "This key does not open the tether console.")
			return
		}
		ss, refusal := s.open(sess, id)
		if ss == nil {
			s.log.Info("ssh: session refused", "identity", id.Actor.String(), "remote", remote, "why", refusal)
			refuse(sess, refusal)
			return
		}
		s.log.Info("ssh: console session opened", "identity", id.Actor.String(), "role", id.Actor.Role, "org", id.Actor.Org,
			"key", id.Fingerprint, "remote", remote)
		next(sess)
		cause := context.Cause(ss.ctx)
		if ss.ctx.Err() == nil || sess.Context().Err() != nil {
			cause = nil // the person quit, or went away
		}
		s.close(ss, cause)
		if msg := endMessage(cause); msg != "" {
			// The console may have been cut off in the alternate screen:
			// leave it, show the cursor, then say why.
			_, _ = io.WriteString(sess, "\x1b[?1049l\x1b[?25h\r\n"+msg+"\r\n")
		}
		s.log.Info("ssh: console session ended", "identity", id.Actor.String(), "remote", remote, "why", endReason(cause))
	}
}

var errSSHNoKey = errors.New("no public key")

func refuse(sess ssh.Session, msg string) {
	_, _ = io.WriteString(sess.Stderr(), "tether: "+msg+"\r\n")
	_ = sess.Exit(1)
}

// open registers a session, or says why it may not open.
func (s *Server) open(sess ssh.Session, id registry.SSHIdentity) (*session, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		s.metrics.refused.WithLabelValues("shutting_down").Inc()
		return nil, "tether is shutting down; connect again to reach a running replica."
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		s.metrics.refused.WithLabelValues("too_many_sessions").Inc()
		return nil, "the console already has as many sessions open as this server allows; try again later."
	}
	held, release := s.cfg.Registry.WhileSSHIdentityWorks(sess.Context(), id)
	ctx, cancel := context.WithCancelCause(held)
	ss := &session{conn: sess, id: id, ctx: ctx, cancel: func(cause error) { cancel(cause); release() }}
	ss.lastInput.Store(s.cfg.Now().UnixNano())
	s.sessions[sess] = ss
	go s.watchIdle(ss)
	return ss, ""
}

func (s *Server) close(ss *session, cause error) {
	s.metrics.ended.WithLabelValues(endReason(cause)).Inc()
	ss.end(context.Canceled)
	s.mu.Lock()
	delete(s.sessions, ss.conn)
	s.mu.Unlock()
}

func endReason(cause error) string {
	switch {
	case cause == nil:
		return "quit"
	case errors.Is(cause, errIdle):
		return "idle"
	case errors.Is(cause, errShuttingDown):
		return "shutdown"
	}
	return "revoked"
}

// watchIdle ends the session once no keystroke came for IdleTimeout.
func (s *Server) watchIdle(ss *session) {
	tick := time.NewTicker(min(s.cfg.IdleTimeout/4, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ss.ctx.Done():
			return
		case <-tick.C:
			if s.cfg.Now().Sub(time.Unix(0, ss.lastInput.Load())) >= s.cfg.IdleTimeout {
				ss.end(errIdle)
				return
			}
		}
	}
}

// program is the session's console: its own model over this server's
// registry, acting as the session's identity, sized to the client's
// window and rendered in its colour profile (none with NO_COLOR).
func (s *Server) program(sess ssh.Session) *tea.Program {
	s.mu.Lock()
	ss, ok := s.sessions[sess]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	noColor := false
	for _, kv := range sess.Environ() {
		if v, ok := strings.CutPrefix(kv, themes.EnvNoColor+"="); ok && v != "" {
			noColor = true
		}
	}
	// Only NO_COLOR is taken from the client: a theme name would be a
	// file name on this server.
	choice, err := themes.Select("", func(k string) string {
		if k == themes.EnvNoColor && noColor {
			return "1"
		}
		return ""
	}, "")
	if err != nil {
		return nil
	}
	// The header says who the session acts as (not where the database
	// is: that is the server's business).
	source := ss.id.Actor.String()
	model := tui.New(tui.Options{
		Backend:   tui.NewLocal(s.cfg.Registry, ss.id.Actor),
		Role:      ss.id.Actor.Role,
		Theme:     choice,
		ServerURL: s.cfg.ServerURL,
		Source:    source,
		Context:   ss.ctx,
		// The person is not at this machine: no file of it read, no
		// program of it run ($EDITOR) for them.
		NoHostAccess: true,
	})
	pty, _, _ := sess.Pty()
	opts := append(bubbletea.MakeOptions(sess), tea.WithInput(&inputClock{r: sess, ss: ss, now: s.cfg.Now}),
		tea.WithWindowSize(boundWindow(pty.Window.Width, pty.Window.Height)), tea.WithFilter(filterMsg))
	if noColor {
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	}
	p := tea.NewProgram(model, opts...)
	go quitWhenDone(ss.ctx, p)
	return p
}

// The window the console draws in is at most this large: its screen
// buffer grows with width x height, and the client says the size (its pty
// request, window changes, a size report typed as input), so a key holder
// asking for millions of cells would take the server's memory. A larger
// window shows the console in its top left corner.
const (
	maxWindowWidth  = 400
	maxWindowHeight = 200
)

func boundWindow(w, h int) (int, int) {
	return min(max(w, 0), maxWindowWidth), min(max(h, 0), maxWindowHeight)
}

// filterMsg bounds every window size the console is told (window changes,
// size reports in the input) and, as bubbletea.MakeOptions' own filter
// (which this one replaces) does, resumes rather than suspends: ctrl+z
// has no shell to return to.
func filterMsg(_ tea.Model, msg tea.Msg) tea.Msg {
	switch m := msg.(type) {
	case tea.WindowSizeMsg:
		m.Width, m.Height = boundWindow(m.Width, m.Height)
		return m
	case tea.SuspendMsg:
		return tea.ResumeMsg{}
	}
	return msg
}

// quitWhenDone quits the console once ctx ends (it restores the client's
// terminal as it goes), and kills it if it has not quit a little later.
func quitWhenDone(ctx context.Context, p *tea.Program) {
	<-ctx.Done()
	p.Quit()
	finished := make(chan struct{})
	go func() { p.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(quitGrace):
		p.Kill()
	}
}

const quitGrace = 2 * time.Second

// inputClock notes when the person last typed.
type inputClock struct {
	r   io.Reader
	ss  *session
	now func() time.Time
}

func (c *inputClock) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.ss.lastInput.Store(c.now().UnixNano())
	}
	return n, err
}

// Session requests refused outright: agent forwarding (charm.land/ssh
// would accept it) and X11.
var refusedRequests = map[string]bool{"auth-agent-req@openssh.com": true, "x11-req": true}

// sessionChannel is ssh.DefaultSessionHandler with agent forwarding and X11
// refused and the environment bounded.
// It counts the connection's open session channels (Server.watchConn).
func (s *Server) sessionChannel(srv *ssh.Server, conn *gossh.ServerConn, newChan gossh.NewChannel, ctx ssh.Context) {
	s.channel(ctx, 1)
	defer s.channel(ctx, -1)
	ssh.DefaultSessionHandler(srv, conn, filteredChannel{newChan}, ctx)
}

type filteredChannel struct{ gossh.NewChannel }

func (f filteredChannel) Accept() (gossh.Channel, <-chan *gossh.Request, error) {
	ch, reqs, err := f.NewChannel.Accept()
	if err != nil {
		return ch, reqs, err
	}
	out := make(chan *gossh.Request)
	go func() {
		defer close(out)
		env := 0
		for r := range reqs {
			if r.Type == "env" {
				env++
			}
			if refusedRequests[r.Type] || (r.Type == "env" && env > maxEnv) {
				if r.WantReply {
					_ = r.Reply(false, nil)
				}
				continue
			}
			out <- r
		}
	}()
	return ch, out, nil
}
