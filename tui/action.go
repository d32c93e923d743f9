package tui

import (
	"context"
	"errors"
	"time"

	tea "charm.land/bubbletea/v2"
)

// Actions are the console's changes. A view or modal asks the root to run
// one (runAction); the root refuses it in read-only mode, runs it in a
// tea.Cmd with a spinner in the status line, and reports its outcome there:
// the success text, or the exact error.

// outcome is what an action reports.
type outcome struct {
	ok  string // the status line on success
	err error
	// then are messages the root handles after the outcome is shown,
	// success or not (requests.go): showing the new token, reopening a form
	// with the error, offering a reload after a conflict.
	then []tea.Msg
}

type actionFunc func(ctx context.Context) outcome

// actionTimeout bounds an action; the registry answers in milliseconds, so
// hitting it means the database is locked or gone.
const actionTimeout = 30 * time.Second

// runActionMsg asks the root to run an action.
type runActionMsg struct {
	label string // what is running, e.g. "requeue j-…"
	fn    actionFunc
	// progress, when set, is shown after the label while the action runs
	// (a bulk action); long actions are not bounded by actionTimeout (each
	// of their operations is).
	progress *bulkProgress
	long     bool
}

func runAction(label string, fn actionFunc) tea.Cmd {
	return func() tea.Msg { return runActionMsg{label: label, fn: fn} }
}

// actionDoneMsg is an action's outcome.
type actionDoneMsg struct {
	id    int
	label string
	outcome
}

func (m *Model) startAction(msg runActionMsg) tea.Cmd {
	if m.ctx.ReadOnly {
		return failed("read-only mode: " + msg.label + " refused (the console was started with --read-only)")
	}
	m.nextAction++
	id := m.nextAction
	m.running[id] = msg.label
	if msg.progress != nil {
		m.progress[id] = msg.progress
	}
	fn, long := msg.fn, msg.long
	return tea.Batch(m.startSpinner(), func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		if long {
			ctx, cancel = context.WithCancel(context.Background())
		}
		defer cancel()
		return actionDoneMsg{id: id, label: msg.label, outcome: fn(ctx)}
	})
}

func (m *Model) finishAction(msg actionDoneMsg) tea.Cmd {
	delete(m.running, msg.id)
	delete(m.progress, msg.id)
	if errors.Is(msg.err, context.DeadlineExceeded) {
		// A change that timed out may have been made all the same: the
		// database may have committed it before the answer was lost.
		m.setStatus(statusErr, msg.label+": no answer within "+humanDuration(actionTimeout)+
			" (the database or the server is not answering); it may have been done all the same: look before trying again")
	} else if msg.err != nil {
		m.setStatus(statusErr, msg.label+" failed: "+errText(msg.err))
	} else if msg.ok != "" {
		m.setStatus(statusOK, msg.ok)
	}
	m.statusOutcome = msg.err != nil || msg.ok != ""
	var cmds []tea.Cmd
	for _, then := range msg.then {
		cmds = append(cmds, m.update(then))
	}
	return tea.Batch(cmds...)
}
