package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/themes"
)

// The `:` commands, k9s's command mode for tether. One table says what
// each is, how it runs, and what the `:` prompt (completion and the list
// of commands) and the `?` help show, so that a command cannot exist
// without being listed.

// command is one `:` command.
type command struct {
	name    string
	aliases []string
	args    string // what the argument is, for help
	desc    string
	run     func(m *Model, c commandMsg) tea.Cmd
}

// commands is set in init: the help command's run shows the help, which
// lists the commands.
var commands []command

func init() {
	commands = []command{
		{name: "overview", aliases: []string{"o", "home"}, desc: "counts, stuck jobs, silent clusters, throughput", run: (*Model).cmdOverview},
		{name: "clusters", aliases: []string{"cl", "cluster"}, args: "[NAME]", desc: "the fleet; with a name, that cluster's detail", run: (*Model).cmdClusters},
		{name: "jobs", aliases: []string{"j"}, args: "[queued|in-progress|stuck|failed|all] [FILTER]", desc: "the queues", run: (*Model).cmdJobs},
		{name: "job", args: "ID", desc: "one job's detail", run: (*Model).cmdJob},
		{name: "events", aliases: []string{"ev"}, args: "[FILTER]", desc: "live tail of agent events", run: func(m *Model, c commandMsg) tea.Cmd {
			m.fresh(screenEvents)
			return m.switchTo(switchMsg{screen: screenEvents, filter: strings.Join(c.args, " ")})
		}},
		{name: "audit", aliases: []string{"au"}, args: "[FILTER]", desc: "the audit trail", run: func(m *Model, c commandMsg) tea.Cmd {
			m.fresh(screenAudit)
			return m.switchTo(switchMsg{screen: screenAudit, filter: strings.Join(c.args, " ")})
		}},
		{name: "rollouts", aliases: []string{"ro", "rollout"}, args: "[NAME]", desc: "fleet rollouts; with a name, that rollout's targets", run: (*Model).cmdRollouts},
		{name: "ca", desc: "tether's certificate authority; i creates it when there is none (admin)", run: func(m *Model, _ commandMsg) tea.Cmd {
			m.fresh(m.screen) // no screen of its own: over the list you are on
			return m.push(newCAView(m.ctx))
		}},
		{name: "help", aliases: []string{"h"}, desc: "keys of the current view, and these commands", run: func(m *Model, _ commandMsg) tea.Cmd {
			m.modal = m.helpModal()
			return nil
		}},
		{name: "quit", aliases: []string{"q", "q!", "exit"}, desc: "leave the console", run: func(m *Model, _ commandMsg) tea.Cmd { return m.quit() }},
	}
}

// runCommand executes a `:` command.
func (m *Model) runCommand(c commandMsg) tea.Cmd {
	for _, cmd := range commands {
		if cmd.name == c.name {
			return cmd.run(m, c)
		}
	}
	return failed("unknown command :" + c.name)
}

// fresh starts the new trail of a command that goes somewhere (docs/
// console.md, Going back): one rule for all of them. The command goes to
// screen's list, the details open there closed and the way back forgotten;
// what it opens goes on top, so esc comes back to that list. :rollouts and
// :ca have no screen of their own and open over the one you are on.
func (m *Model) fresh(screen int) {
	m.back = nil
	m.screen = screen
	m.stacks[screen] = m.stacks[screen][:1]
}

func (m *Model) cmdOverview(commandMsg) tea.Cmd {
	m.fresh(screenOverview)
	return nil
}

func (m *Model) cmdClusters(c commandMsg) tea.Cmd {
	rest := strings.Join(c.args, " ")
	m.fresh(screenClusters)
	if rest == "" {
		return nil
	}
	found := m.ctx.Fleet.resolve(rest)
	if len(found) != 1 {
		return m.switchTo(switchMsg{screen: screenClusters, filter: rest})
	}
	return m.push(newClusterDetail(m.ctx, found[0].ID))
}

func (m *Model) cmdJobs(c commandMsg) tea.Cmd {
	m.fresh(screenJobs)
	sw := switchMsg{screen: screenJobs}
	args := c.args
	if len(args) > 0 {
		if _, ok := m.jobs.tabByName(args[0]); ok {
			sw.tab, args = args[0], args[1:]
		}
	}
	sw.filter = strings.Join(args, " ")
	return m.switchTo(sw)
}

func (m *Model) cmdJob(c commandMsg) tea.Cmd {
	rest := strings.Join(c.args, " ")
	if rest == "" {
		return failed(":job needs a job id, e.g. :job j-01…")
	}
	m.fresh(screenJobs)
	return m.push(newJobDetail(m.ctx, rest, nil))
}

func (m *Model) cmdRollouts(c commandMsg) tea.Cmd {
	rest := strings.Join(c.args, " ")
	m.fresh(m.screen) // no screen of their own: over the list you are on
	if rest != "" {
		return m.push(newRolloutDetail(m.ctx, rest, rest))
	}
	return m.push(newRolloutsView(m.ctx))
}

func (m *Model) helpModal() modal {
	k := m.ctx.Keys
	global := [][]key.Binding{
		{k.Views[0], k.Views[1], k.Views[2], k.Views[3], k.Views[4]},
		{k.NextView, k.PrevView, k.Command, k.Filter},
		{k.Back, k.Wide, k.Help, k.Quit},
	}
	return &helpModal{ctx: m.ctx, title: m.top().Title(), keys: m.top().KeyMap(), global: global, pager: newPager()}
}

// commandsHelp lists the commands for the `?` help, wrapped to width: each
// name with its argument, `:help` for the long form.
func commandsHelp(st *themes.Styles, width int) string {
	var lines []string
	line, w := "", 0
	for _, c := range commands {
		word := ":" + c.name
		if c.args != "" {
			word += " " + shortArgs(c.args)
		}
		ww := ansi.StringWidth(word)
		if w > 0 && w+2+ww > width {
			lines = append(lines, line)
			line, w = "", 0
		}
		if w > 0 {
			line += st.Render(themes.Muted, "  ")
			w += 2
		}
		line += st.Key.Render(":"+c.name) + st.KeyDesc.Render(strings.TrimPrefix(word, ":"+c.name))
		w += ww
	}
	return strings.Join(append(lines, line), "\n")
}

// shortArgs is an argument as the help has room for: the jobs tabs go.
func shortArgs(args string) string {
	if strings.HasPrefix(args, "[queued|") {
		_, rest, _ := strings.Cut(args, "] ")
		return "[TAB] " + rest
	}
	return args
}
