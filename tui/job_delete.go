package tui

import (
	"context"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// deleteJobs asks, then deletes the finished ones of jobs (the marked jobs
// or the selected one) with their timelines. Open jobs are left alone: the
// registry refuses them (cancel first), and the dialog says so before.
func deleteJobs(ctx *Context, jobs []registry.Job) tea.Cmd {
	var ok, open []registry.Job
	for _, j := range jobs {
		if j.State.Terminal() {
			ok = append(ok, j)
		} else {
			open = append(open, j)
		}
	}
	if len(ok) == 0 {
		if len(jobs) == 1 {
			return failed("cannot delete " + jobs[0].ID + ": it is " + stateLabel(jobs[0].State) + "; only finished jobs can be deleted: cancel it first (C)")
		}
		return failed("none of the marked jobs can be deleted: they are all queued or in progress; cancel them first (C)")
	}
	var title, body string
	if len(ok) == 1 {
		j := ok[0]
		title = "Delete job " + j.ID + "?"
		body = describeJob(ctx, &j) + ". The job and its timeline are deleted for good."
	} else {
		title = fmt.Sprintf("Delete %s?", plural(len(ok), "finished job", "finished jobs"))
		body = "They and their timelines are deleted for good."
	}
	if len(open) > 0 {
		body += fmt.Sprintf(" %s still open (queued or in progress) and will be left alone: cancel first to delete.", plural(len(open), "marked job is", "marked jobs are"))
	}
	body += " The audit trail keeps a record of the delete."
	b := ctx.Backend
	ids := idsOf(ok)
	label := "delete " + ids[0]
	if len(ids) > 1 {
		label = fmt.Sprintf("delete %d jobs", len(ids))
	}
	return ctx.showModal(newConfirm(ctx, title, body, "delete", true, runAction(label, func(cx context.Context) outcome {
		var gone []string
		out := bulk(cx, ids, idsOf(open), "deleted", func(cx context.Context, id string) error {
			_, err := b.DeleteJob(cx, id, "deleted from the console")
			if err == nil {
				gone = append(gone, id)
			}
			return err
		})
		out.then = append(out.then, jobsGoneMsg{ids: gone})
		return out
	})))
}
