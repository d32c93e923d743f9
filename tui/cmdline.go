package tui

import (
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/themes"
)

// jobTabNames are the jobs view's tabs as commands spell them.
var jobTabNames = []string{"queued", "in-progress", "stuck", "failed", "all"}

// commandMsg is a command line the person entered.
type commandMsg struct {
	name string // canonical command name
	args []string
	raw  string
}

// cmdline is the `:` prompt: completion on tab (commands, then their
// arguments), history on up and down.
type cmdline struct {
	ctx     *Context
	input   textinput.Model
	active  bool
	history []string
	hpos    int    // index into history while browsing; len(history) = the new line
	draft   string // what was typed before browsing history
	matches []string
	mpos    int
	err     string
}

var (
	keyComplete = key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete"))
	keyHistUp   = key.NewBinding(key.WithKeys("up", "ctrl+p"), key.WithHelp("↑", "previous"))
	keyHistDown = key.NewBinding(key.WithKeys("down", "ctrl+n"), key.WithHelp("↓", "next"))
	keyRun      = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run"))
)

func newCmdline(ctx *Context) *cmdline {
	return &cmdline{ctx: ctx, input: newInput(ctx, "")}
}

func (c *cmdline) open() {
	c.active = true
	c.input = newInput(c.ctx, "")
	c.input.Focus()
	c.hpos = len(c.history)
	c.matches, c.err = nil, ""
}

func (c *cmdline) close() {
	c.active = false
	c.input.Blur()
}

// candidates completes the word being typed.
func (c *cmdline) candidates(line string) (prefix string, out []string) {
	fields := strings.Fields(line)
	trailing := strings.HasSuffix(line, " ")
	if len(fields) == 0 || (len(fields) == 1 && !trailing) {
		word := ""
		if len(fields) == 1 {
			word = fields[0]
		}
		for _, cmd := range commands {
			if strings.HasPrefix(cmd.name, word) {
				out = append(out, cmd.name)
			}
		}
		return "", out
	}
	name := canonical(fields[0])
	word := ""
	if !trailing {
		word = fields[len(fields)-1]
		fields = fields[:len(fields)-1]
	}
	prefix = strings.Join(fields, " ") + " "
	var pool []string
	switch name {
	case "jobs":
		if len(fields) == 1 {
			pool = jobTabNames
		}
		for _, cl := range c.ctx.Fleet.sorted {
			pool = append(pool, "cluster:"+cl.Name)
		}
		pool = append(pool, "kind:apply", "kind:delete", "kind:intent")
	case "clusters":
		if len(fields) == 1 {
			for _, cl := range c.ctx.Fleet.sorted {
				pool = append(pool, cl.Name)
			}
		}
	case "events", "audit":
		for _, cl := range c.ctx.Fleet.sorted {
			pool = append(pool, "cluster:"+cl.Name)
		}
	}
	for _, p := range pool {
		if strings.HasPrefix(strings.ToLower(p), strings.ToLower(word)) {
			out = append(out, p)
		}
	}
	return prefix, out
}

// canonical maps an alias to its command name ("" if unknown).
func canonical(word string) string {
	for _, cmd := range commands {
		if cmd.name == word || slices.Contains(cmd.aliases, word) {
			return cmd.name
		}
	}
	return ""
}

// Update handles a key while the prompt is open. It returns a commandMsg cmd
// on enter.
func (c *cmdline) Update(msg tea.Msg) tea.Cmd {
	k, isKey := msg.(tea.KeyPressMsg)
	if !isKey {
		var cmd tea.Cmd
		c.input, cmd = c.input.Update(msg)
		return cmd
	}
	switch {
	case key.Matches(k, keyCancel):
		c.close()
		return nil
	case key.Matches(k, keyRun):
		line := strings.TrimSpace(c.input.Value())
		if line == "" {
			c.close()
			return nil
		}
		fields := strings.Fields(line)
		name := canonical(fields[0])
		if name == "" {
			_, cands := c.candidates(fields[0])
			if len(cands) == 1 {
				name = cands[0]
			} else {
				c.err = "unknown command :" + fields[0] + " (tab completes; :help lists keys)"
				return nil
			}
		}
		if len(c.history) == 0 || c.history[len(c.history)-1] != line {
			c.history = append(c.history, line)
		}
		c.close()
		return func() tea.Msg { return commandMsg{name: name, args: fields[1:], raw: line} }
	case key.Matches(k, keyComplete):
		line := c.input.Value()
		if c.matches != nil && len(c.matches) > 1 {
			c.mpos = (c.mpos + 1) % len(c.matches)
		} else {
			prefix, cands := c.candidates(line)
			if len(cands) == 0 {
				c.err = "no completion"
				return nil
			}
			c.matches, c.mpos = nil, 0
			if len(cands) > 1 {
				c.matches = make([]string, len(cands))
				for i, s := range cands {
					c.matches[i] = prefix + s
				}
				// Complete the common prefix first.
				common := commonPrefix(cands)
				word := strings.TrimPrefix(line, prefix)
				if len(common) > len(word) {
					c.setValue(prefix + common)
					c.matches = nil
					return nil
				}
			} else {
				c.setValue(prefix + cands[0] + " ")
				return nil
			}
		}
		c.setValue(c.matches[c.mpos])
		return nil
	case key.Matches(k, keyHistUp):
		if c.hpos == len(c.history) {
			c.draft = c.input.Value()
		}
		if c.hpos > 0 {
			c.hpos--
			c.setValue(c.history[c.hpos])
		}
		return nil
	case key.Matches(k, keyHistDown):
		if c.hpos < len(c.history) {
			c.hpos++
			if c.hpos == len(c.history) {
				c.setValue(c.draft)
			} else {
				c.setValue(c.history[c.hpos])
			}
		}
		return nil
	}
	c.matches, c.err = nil, ""
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	return cmd
}

func (c *cmdline) setValue(s string) {
	c.input.SetValue(s)
	c.input.CursorEnd()
	c.err = ""
}

func commonPrefix(list []string) string {
	if len(list) == 0 {
		return ""
	}
	p := list[0]
	for _, s := range list[1:] {
		for !strings.HasPrefix(s, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

// View renders the prompt line, with the completions or the error after it.
func (c *cmdline) View(width int) string {
	st := c.ctx.Styles
	// As wide as what is typed (up to half the line): the rest shows the
	// commands, all of them on an empty prompt.
	c.input.SetWidth(min(max(10, width/2), max(10, ansi.StringWidth(c.input.Value())+2)))
	// The input scrolled for its old width when a completion or the history
	// set a longer line: place it again, or its start stays hidden.
	c.input.SetCursor(c.input.Position())
	line := st.Render(themes.Accent, ":") + c.input.View()
	var tail string
	switch {
	case c.err != "":
		tail = st.Render(themes.Danger, "  "+c.err)
	case len(c.matches) > 1:
		var parts []string
		for i, m := range c.matches {
			word := m[strings.LastIndex(m, " ")+1:]
			if i == c.mpos {
				parts = append(parts, st.Render(themes.Accent, word))
			} else {
				parts = append(parts, st.Render(themes.Muted, word))
			}
		}
		tail = "  " + strings.Join(parts, " ")
	default:
		if _, cands := c.candidates(c.input.Value()); len(cands) > 0 && (len(cands) <= 8 || strings.TrimSpace(c.input.Value()) == "") {
			tail = st.Render(themes.Muted, "  "+strings.Join(cands, " "))
		}
	}
	return pad(line+tail, width)
}

func (c *cmdline) KeyMap() help.KeyMap {
	b := []key.Binding{keyRun, keyComplete, keyHistUp, keyHistDown, keyCancel}
	return keyMap{short: b, full: [][]key.Binding{b}}
}
