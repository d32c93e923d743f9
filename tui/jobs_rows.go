package tui

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/tetherhq/tether/internal/display"
	"github.com/tetherhq/tether/registry"
	"github.com/tetherhq/tether/themes"
)

// How a job is drawn as a row of the jobs table, and the tabs above it.

func (v *jobsView) rowKey(i int) string {
	j := v.job(i)
	if j == nil {
		return "loading"
	}
	c := v.ctx.Fleet.cluster(j.ClusterID)
	cv := int64(0)
	if c != nil {
		cv = c.Status.UpdatedAt.UnixMilli() + c.Version
	}
	return fmt.Sprintf("%d|%s|%d|%d|%d", v.tab, j.ID, j.UpdatedAt.UnixMilli(), v.ctx.Now.Unix(), cv)
}

func (v *jobsView) rowCells(i int) []cell {
	j := v.job(i)
	if j == nil {
		return []cell{txt("…", themes.Muted)}
	}
	now := v.ctx.Now
	c := v.ctx.Fleet.cluster(j.ClusterID)
	why := Classify(j, c, now)
	state := txt(stateLabel(j.State), jobStateKind(j.State))
	if why.Reason != registry.NotStuck && v.tab != tabStuck {
		state = cell{{"⚠ ", themes.Warning}, {stateLabel(j.State), themes.Warning}}
	}
	// The attempt against the bound on lease reclaims; past it (an admin
	// requeued the job) the attempt alone, amber: "3/2" read "3 of 2".
	att, attKind := fmt.Sprint(j.Attempt), themes.Plain
	if c != nil && c.Policy.MaxAttempts > 0 {
		if j.Attempt <= c.Policy.MaxAttempts {
			att += "/" + fmt.Sprint(c.Policy.MaxAttempts)
		} else {
			attKind = themes.Warning
		}
	}
	activity := txt("-", themes.Muted)
	if j.State == registry.JobInProgress {
		k := themes.Plain
		if why.Reason == registry.StuckNoLeaseSilent {
			k = themes.Warning
		}
		activity = txt(age(now, j.LastActivityAt), k)
	}
	kind := string(j.Kind)
	if v.tab == tabFailed {
		return []cell{
			txt(j.ID, themes.Muted),
			txt(v.ctx.Fleet.clusterName(j.ClusterID), themes.Plain),
			txt(kind, themes.Plain),
			txt(j.Target.String(), themes.Plain),
			txt(att, attKind),
			txt(errorSummary(j.Error), themes.Danger),
			txt(age(now, j.CreatedAt), themes.Muted),
		}
	}
	cells := []cell{
		txt(j.ID, themes.Muted),
		txt(v.ctx.Fleet.clusterName(j.ClusterID), themes.Plain),
		txt(kind, themes.Plain),
	}
	cells = append(cells, txt(j.Target.String(), themes.Plain),
		state, txt(att, attKind), leaseCell(v.ctx.Styles, j, now), activity)
	if v.tab == tabStuck {
		cells = append(cells, txt(why.Reason.String(), themes.Warning))
	}
	return append(cells, txt(age(now, j.CreatedAt), themes.Muted))
}

// leaseCell is a countdown bar of the lease left, red once it expired.
func leaseCell(st *themes.Styles, j *registry.Job, now time.Time) cell {
	if j.State != registry.JobInProgress {
		return nil
	}
	if !j.Leased() {
		return txt("no lease", themes.Muted)
	}
	left := j.LeaseExpiresAt.Sub(now)
	if left <= 0 {
		return txt("expired "+humanDuration(-left), themes.Danger)
	}
	total := time.Duration(max(1, j.LeaseSeconds)) * time.Second
	frac := float64(left) / float64(total)
	const w = 5
	full := min(w, max(1, int(frac*w+0.5)))
	k := themes.Good
	if frac < 0.25 {
		k = themes.Warning
	}
	return cell{{strings.Repeat("█", full), k}, {strings.Repeat("░", w-full), themes.Muted}, {" " + humanDuration(left), themes.Plain}}
}

func jobStateKind(s registry.JobState) themes.Kind {
	switch s {
	case registry.JobQueued:
		return themes.Info
	case registry.JobInProgress:
		return themes.Accent
	case registry.JobSucceeded:
		return themes.Good
	case registry.JobFailed, registry.JobConflict:
		return themes.Danger
	}
	return themes.Muted
}

// tabLabels are the tabs as drawn, with the cell ranges a click hits.
func (v *jobsView) tabLabels() ([]string, [][2]int) {
	var labels []string
	var ranges [][2]int
	x := 0
	for i := range numTabs {
		n := v.tabCount(i)
		count := "…"
		if n >= 0 {
			count = thousands(int64(n))
		}
		label := " " + jobTabLabels[i] + " " + count + " "
		w := ansi.StringWidth(label)
		labels = append(labels, label)
		ranges = append(ranges, [2]int{x, x + w})
		x += w + 1
	}
	return labels, ranges
}

func (v *jobsView) tabAt(x int) int {
	_, ranges := v.tabLabels()
	for i, r := range ranges {
		if x >= r[0] && x < r[1] {
			return i
		}
	}
	return -1
}

// errorSummary is a job's error on one line for a list: the start of it
// (an agent may send a megabyte), safe for the terminal.
func errorSummary(e string) string {
	const most = 512
	if len(e) > most {
		n := most
		for n > 0 && !utf8.RuneStart(e[n]) {
			n--
		}
		e = e[:n] + "…"
	}
	if e == "" {
		return "-"
	}
	return display.Safe(e)
}
