package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// tokenModal shows a registration token the only time it exists outside the
// agent that will redeem it, with the exact command that registers the agent
// and copy to the clipboard over OSC 52.
type tokenModal struct {
	ctx     *Context
	cluster *registry.Cluster
	token   *registry.IssuedToken
	copied  string
	warned  bool
}

var (
	keyCopyToken   = key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "copy token"))
	keyCopyCommand = key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "copy command"))
)

func newTokenModal(ctx *Context, c *registry.Cluster, t *registry.IssuedToken) *tokenModal {
	return &tokenModal{ctx: ctx, cluster: c, token: t}
}

// registerCommand is the command line that registers the cluster's agent.
// The token is not on it (shell history and ps would keep it): the agent
// reads it from standard input, where it is pasted.
func (t *tokenModal) registerCommand() string {
	return fmt.Sprintf("tether agent register --server %s --token - --state-dir %s", t.ctx.Opts.ServerURL, t.stateDir())
}

// serverUnknown: this console serves no agent API and was told of no
// server, so the command's --server is a placeholder.
func serverUnknown(ctx *Context) bool { return ctx.Opts.ServerURL == "URL" }

// stateDir is where the agent keeps its credential: the configured
// directory, or one per cluster in the working directory.
func (t *tokenModal) stateDir() string {
	if t.ctx.Opts.AgentStateDir != "" {
		return t.ctx.Opts.AgentStateDir
	}
	slug := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, t.cluster.Name)
	// Outside the working directory, which is often a repository (make run)
	// or a container's build context: the state directory holds the
	// agent's credential.
	return "~/.local/state/tether-agent-" + slug
}

func (t *tokenModal) Update(msg tea.Msg) (modal, tea.Cmd) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return t, nil
	}
	switch {
	case key.Matches(k, keyCopyToken):
		t.copied, t.warned = "token", false
		return t, tea.Batch(tea.SetClipboard(t.token.Secret.Reveal()),
			info("token copied to the clipboard (OSC 52: the terminal must allow clipboard access)"))
	case key.Matches(k, keyCopyCommand):
		t.copied, t.warned = "command", false
		return t, tea.Batch(tea.SetClipboard(t.registerCommand()),
			info("register command copied to the clipboard (OSC 52: the terminal must allow clipboard access)"))
	case key.Matches(k, keyClose), k.String() == "enter":
		if t.copied == "" && !t.warned {
			t.warned = true
			return t, nil
		}
		return nil, info("token for " + t.cluster.Name + " closed; it cannot be shown again (t issues a new one)")
	}
	return t, nil
}

func (t *tokenModal) View() string {
	ctx := t.ctx
	st := ctx.Styles
	width := min(ctx.Width, 100)
	inner := width - 4
	now := ctx.Now
	tok := t.token.Secret.Reveal()
	// Prose wraps; ids, the token and the command never do (a line break
	// inside them would break a copy from the screen).
	line := func(s string, k themes.Kind) string { return st.Render(k, truncate(s, inner)) + "\n" }
	var b strings.Builder
	b.WriteString(line("Cluster  "+t.cluster.Name+" ("+t.cluster.ID+")", themes.Plain))
	b.WriteString(line("Expires  "+until(now, t.token.Token.ExpiresAt)+", at "+stamp(t.token.Token.ExpiresAt), themes.Plain))
	b.WriteString("\n" + st.Render(themes.Muted, wrap("It registers one agent, once. It is shown only now: tether keeps only its hash.", inner)) + "\n\n")
	b.WriteString(st.Section.Render("Token") + "\n")
	b.WriteString("  " + st.Secret.Render(tok) + "\n\n")
	b.WriteString(st.Section.Render("Register the agent") + "\n")
	parts := []string{
		"tether agent register \\",
		"  --server " + ctx.Opts.ServerURL + " \\",
		"  --token - \\",
		"  --state-dir " + t.stateDir(),
	}
	for _, p := range parts {
		b.WriteString(line("  "+p, themes.Plain))
	}
	b.WriteString(st.Render(themes.Muted, wrap("and paste the token when it asks (c copies it): it stays out of shell history and ps.", inner)) + "\n")
	if serverUnknown(ctx) {
		b.WriteString(st.Render(themes.Warning, wrap("This console serves no agent API: put your tether serve's address in place of URL (or start the console with --serve).", inner)) + "\n")
	}
	b.WriteString("\n")
	switch {
	case t.warned:
		b.WriteString(st.Render(themes.Warning, wrap("Close without copying? The token cannot be shown again (t issues a new one, voiding this one). Press esc again to close.", inner)) + "\n")
	case t.copied != "":
		b.WriteString(st.Render(themes.Good, "✓ "+t.copied+" copied to the clipboard") + "\n")
	default:
		b.WriteString("\n")
	}
	b.WriteString(hints(ctx, "c", "copy token", "a", "copy command (one line)", "esc", "close"))
	return frame(ctx, "Registration token for "+t.cluster.Name+" (shown once)", b.String(), width, false)
}

func (t *tokenModal) KeyMap() help.KeyMap {
	return keyMap{short: []key.Binding{keyCopyToken, keyCopyCommand, keyClose},
		full: [][]key.Binding{{keyCopyToken, keyCopyCommand, keyClose}}}
}
