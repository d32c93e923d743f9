package tui

import (
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/tetherhq/tether/registry"
)

// Where each list is, saved before a drill changes it and put back by esc
// (nav.go).

type jobsState struct {
	tab            int
	filter         string
	oldest         bool
	pin            registry.JobCursor
	cursor, offset int
}

func (v *jobsView) saveList() any {
	t := v.table()
	return jobsState{tab: v.tab, filter: v.filter, oldest: v.oldest, pin: v.pin, cursor: t.cursor, offset: t.offset}
}

func (v *jobsView) restoreList(s any) tea.Cmd {
	st := s.(jobsState)
	v.tab, v.filter, v.oldest = st.tab, st.filter, st.oldest
	v.fl = parseJobFilter(v.ctx.Fleet, st.filter)
	v.showSort()
	return v.requeryAt(st.pin, st.cursor, st.offset)
}

type clustersState struct {
	filter   string
	sortBy   int
	reverse  bool
	selected string
}

func (v *clustersView) saveList() any {
	st := clustersState{filter: v.filter, sortBy: v.sortBy, reverse: v.reverse}
	if c := v.selected(); c != nil {
		st.selected = c.ID
	}
	return st
}

func (v *clustersView) restoreList(s any) tea.Cmd {
	st := s.(clustersState)
	v.filter, v.sortBy, v.reverse = st.filter, st.sortBy, st.reverse
	v.filterErr = parseTextQuery(strings.Fields(st.filter)).err
	v.built = -1
	v.rebuild()
	if i := slices.IndexFunc(v.rows, func(c *registry.Cluster) bool { return c.ID == st.selected }); i >= 0 {
		v.table.setCursor(i, len(v.rows))
	}
	return nil
}

// The live tails keep their filter; their selection follows the newest
// entries anyway.

func (v *eventsView) saveList() any             { return v.filter }
func (v *eventsView) restoreList(s any) tea.Cmd { return v.SetFilter(s.(string)) }
func (v *auditView) saveList() any              { return v.filter }
func (v *auditView) restoreList(s any) tea.Cmd  { return v.SetFilter(s.(string)) }
