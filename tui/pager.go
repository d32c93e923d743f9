package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// pager is a scrollable document (the detail views), on the bubbles
// viewport, driven by the console's own navigation keys (the viewport's
// defaults would take d, u and f, which are actions here).
type pager struct {
	vp viewport.Model
}

func newPager() pager {
	vp := viewport.New()
	vp.MouseWheelEnabled = true
	vp.FillHeight = true
	return pager{vp: vp}
}

func (p *pager) setSize(w, h int) {
	p.vp.SetWidth(w)
	p.vp.SetHeight(max(1, h))
}

// setContent replaces the document, keeping the scroll position.
func (p *pager) setContent(s string) {
	off := p.vp.YOffset()
	p.vp.SetContentLines(strings.Split(s, "\n"))
	p.vp.SetYOffset(off)
}

func (p *pager) navigate(msg tea.KeyPressMsg, k *Keys) bool {
	switch {
	case key.Matches(msg, k.Up):
		p.vp.ScrollUp(1)
	case key.Matches(msg, k.Down):
		p.vp.ScrollDown(1)
	case key.Matches(msg, k.Top):
		p.vp.GotoTop()
	case key.Matches(msg, k.Bottom):
		p.vp.GotoBottom()
	case key.Matches(msg, k.PageUp):
		p.vp.PageUp()
	case key.Matches(msg, k.PageDown):
		p.vp.PageDown()
	default:
		return false
	}
	return true
}

func (p *pager) wheel(msg tea.MouseWheelMsg) {
	p.vp, _ = p.vp.Update(msg)
}

func (p *pager) view() string { return p.vp.View() }

// show scrolls line into sight, as little as it takes.
func (p *pager) show(line int) {
	switch h := p.vp.Height(); {
	case line < p.vp.YOffset():
		p.vp.SetYOffset(line)
	case line >= p.vp.YOffset()+h:
		p.vp.SetYOffset(line - h + 1)
	}
}

// scrollInfo is "lines 1-30 of 80" when the document does not fit.
func (p *pager) scrollInfo() string {
	total := p.vp.TotalLineCount()
	h := p.vp.Height()
	if total <= h {
		return ""
	}
	first := p.vp.YOffset() + 1
	return "lines " + itoa(first) + "-" + itoa(min(total, first+h-1)) + " of " + itoa(total)
}
