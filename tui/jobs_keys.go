package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// The jobs view's keys: moving, marking, the actions on the marked or
// selected jobs, and what the footer and help list.

func (v *jobsView) key(msg tea.KeyPressMsg) tea.Cmd {
	if cmd, ok := moveInList(v.table(), v.ctx.Keys, msg, v.rowCount(), 2, v.open, v.moved); ok {
		return cmd
	}
	k := v.ctx.Keys
	t := v.table()
	switch {
	case key.Matches(msg, k.Left):
		return v.setTab(v.tab - 1)
	case key.Matches(msg, k.Right):
		return v.setTab(v.tab + 1)
	case key.Matches(msg, k.Enter):
		return v.open()
	case key.Matches(msg, k.Follow):
		return v.toggleFollow()
	case key.Matches(msg, k.Sort), key.Matches(msg, k.SortPrev):
		return info("jobs sort only by AGE, the order the store pages them in: S reverses it")
	case isColumnLetter(t, msg):
		// The store pages jobs by submission only: sorting the window on
		// screen by another column would pretend the list is sorted.
		col, _ := columnLetter(t, msg)
		return info("jobs cannot sort by " + t.cols[col].Title + ": the store pages them by AGE only (S reverses it)")
	case key.Matches(msg, k.SortReverse):
		v.oldest = !v.oldest
		v.showSort()
		if v.oldest {
			return tea.Batch(v.requery(), info("jobs: the oldest first (S for the newest first)"))
		}
		return tea.Batch(v.requery(), info("jobs: the newest first (S for the oldest first)"))
	case key.Matches(msg, k.CopyID):
		if j := v.selected(); j != nil {
			return tea.Batch(tea.SetClipboard(j.ID), info("copied "+j.ID+" to the clipboard (OSC 52)"))
		}
	case key.Matches(msg, k.Mark):
		if j := v.selected(); j != nil {
			if _, ok := v.marks[j.ID]; ok {
				delete(v.marks, j.ID)
			} else {
				v.marks[j.ID] = *j
			}
			t.setCursor(t.cursor+1, v.rowCount())
			return v.moved()
		}
	case key.Matches(msg, k.MarkAll):
		v.all = !v.all
		clear(v.marks)
		if v.all {
			return info("every job of " + v.scope().what + " is marked: R, C, F and D act on them all (u clears)")
		}
		return info("cleared the marks")
	case key.Matches(msg, k.ClearMarks):
		n := len(v.marks)
		clear(v.marks)
		if v.all {
			v.all = false
			return info("cleared the marks (the whole tab)")
		}
		return info(fmt.Sprintf("cleared %s", plural(n, "mark", "marks")))
	case key.Matches(msg, k.Requeue):
		if v.all {
			return bulkJobs(v.ctx, registry.ActionRequeue, v.scope())
		}
		return v.act(requeueJobs)
	case key.Matches(msg, k.Cancel):
		if v.all {
			return bulkJobs(v.ctx, registry.ActionCancel, v.scope())
		}
		return v.act(cancelJobs)
	case key.Matches(msg, k.Retry):
		if v.all {
			return bulkJobs(v.ctx, registry.ActionRetry, v.scope())
		}
		return v.act(retryJobs)
	case key.Matches(msg, k.DeleteJob):
		if v.all {
			return bulkJobs(v.ctx, registry.ActionDelete, v.scope())
		}
		return v.act(deleteJobs)
	case key.Matches(msg, k.ExtendLease):
		if j := v.selected(); j != nil {
			return extendLease(v.ctx, j)
		}
	case key.Matches(msg, k.SubmitJob):
		return v.ctx.showModal(newSubmitForm(v.ctx, ""))
	}
	return nil
}

// move moves the cursor for the mouse (the rows start on the view's third
// line, under the title and the tabs).
func (v *jobsView) move(msg tea.Msg) tea.Cmd {
	cmd, _ := moveInList(v.table(), v.ctx.Keys, msg, v.rowCount(), 2, v.open, v.moved)
	return cmd
}

// moved pins the job under the cursor, which may need its page read.
func (v *jobsView) moved() tea.Cmd {
	v.pinCursor()
	return v.ensureWindow()
}

// targets are the marked jobs, or the selected one.
// act runs a job action on the marked jobs or the selected one; with
// neither (an empty tab) there is nothing to act on and nothing to say: it
// said "none of the marked jobs can be retried" with no job marked.
func (v *jobsView) act(action func(*Context, []registry.Job) tea.Cmd) tea.Cmd {
	jobs := v.targets()
	if len(jobs) == 0 {
		return nil
	}
	return action(v.ctx, jobs)
}

func (v *jobsView) targets() []registry.Job {
	if len(v.marks) > 0 {
		out := make([]registry.Job, 0, len(v.marks))
		for _, j := range v.marks {
			out = append(out, j)
		}
		slices.SortFunc(out, func(a, b registry.Job) int { return strings.Compare(a.ID, b.ID) })
		return out
	}
	if j := v.selected(); j != nil {
		return []registry.Job{*j}
	}
	return nil
}

func (v *jobsView) open() tea.Cmd {
	j := v.selected()
	if j == nil {
		return nil
	}
	d := newJobDetail(v.ctx, j.ID, j)
	return v.ctx.open(d)
}

func (v *jobsView) Actions() []key.Binding {
	k := v.ctx.Keys
	return []key.Binding{k.Requeue, k.Cancel, k.Retry, k.DeleteJob, k.ExtendLease, k.Mark, k.MarkAll, k.ClearMarks, k.SubmitJob}
}

func (v *jobsView) KeyMap() help.KeyMap {
	k := v.ctx.Keys
	// The footer names what the tab's jobs take: a failed job is retried
	// or deleted (or requeued when it ran out of attempts), never canceled
	// and holds no lease.
	short := []key.Binding{k.Enter, k.Left, k.Right, k.Requeue, k.Cancel, k.ExtendLease, k.CopyID, k.Mark, k.Filter, k.Help, k.Quit}
	if v.tab == tabFailed {
		short = []key.Binding{k.Enter, k.Left, k.Right, k.Retry, k.Delete, k.Requeue, k.CopyID, k.Mark, k.Filter, k.Help, k.Quit}
	}
	return keyMap{
		short: short,
		full: append([][]key.Binding{
			{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown},
			{k.Left, k.Right, k.Enter, k.Filter, k.SortReverse, k.Follow},
			{k.Requeue, k.Cancel, k.Retry, k.DeleteJob, k.ExtendLease, k.CopyID},
			{k.Mark, k.MarkAll, k.ClearMarks, k.SubmitJob},
		}, v.table().helpGroups(k)...),
	}
}
