package tui

import (
	"slices"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// Requests to the root. Views, modals and actions never write the root
// model's fields: they ask with one of these messages, which the root
// handles (model.go, requests). A view asks through its Context (showModal,
// open, switchTo), which queues the message for the root to handle right
// after the message being handled, so that the very next key already goes
// where it should; an action lists them in its outcome (then), handled once
// its outcome is shown.

// showModalMsg opens a modal over the screen.
type showModalMsg struct{ modal modal }

// closeModalMsg closes modal if it is still the one open.
type closeModalMsg struct{ modal modal }

// openDetailMsg pushes a detail over the current screen and starts its
// first read.
type openDetailMsg struct{ detail detail }

// confirmMsg asks for a confirmation (newConfirm) before run.
type confirmMsg struct {
	title, body, yes string
	danger           bool
	run              tea.Cmd
	alt              *confirmAlt
}

// showTokenMsg shows a token just issued, once, with its cluster as the
// fleet knows it now (or cluster, when the fleet has not seen it yet).
type showTokenMsg struct {
	cluster *registry.Cluster
	token   *registry.IssuedToken
}

// conflictMsg opens the conflict dialog after an edit lost its
// compare-and-swap: the cluster as edited, the spec the form started from
// and the one it tried to save.
type conflictMsg struct {
	cluster        *registry.Cluster
	original, mine registry.ClusterSpec
}

// unmarkJobsMsg clears the jobs view's marks of ids; all clears the mark
// of the whole tab (a bulk action ended).
type unmarkJobsMsg struct {
	ids []string
	all bool
}

// jobsGoneMsg: these jobs were deleted; a detail of one of them on top
// closes (it has nothing left to show).
type jobsGoneMsg struct{ ids []string }

// request handles a request; it reports whether msg was one.
func (m *Model) request(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case showModalMsg:
		m.modal = msg.modal
	case closeModalMsg:
		m.closeModal(msg.modal)
	case openDetailMsg:
		return m.push(msg.detail), true
	case switchMsg:
		return m.switchTo(msg), true
	case confirmMsg:
		m.modal = newConfirm(m.ctx, msg.title, msg.body, msg.yes, msg.danger, msg.run).withAlt(msg.alt)
	case showTokenMsg:
		c := msg.cluster
		if cur := m.ctx.Fleet.cluster(c.ID); cur != nil {
			c = cur
		}
		m.modal = newTokenModal(m.ctx, c, msg.token)
	case conflictMsg:
		d := newConflictDialog(m.ctx, msg.cluster, msg.original, msg.mine)
		m.modal = d
		return d.load(), true
	case unmarkJobsMsg:
		for _, id := range msg.ids {
			delete(m.jobs.marks, id)
		}
		if msg.all {
			m.jobs.all = false
		}
	case jobsGoneMsg:
		if d, ok := m.top().(*jobDetail); ok && slices.Contains(msg.ids, d.id) {
			m.stacks[m.screen] = m.stacks[m.screen][:len(m.stacks[m.screen])-1]
		}
	default:
		return nil, false
	}
	return nil, true
}
