package tui

import (
	"strings"
	"time"

	"github.com/tetherhq/tether/themes"
)

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// sparkline draws values (oldest first) in width cells, scaled to their
// maximum; a zero is the lowest bar, so that an idle period stays visible.
func sparkline(values []int64, width int) string {
	if width <= 0 {
		return ""
	}
	if len(values) > width {
		values = values[len(values)-width:]
	}
	var hi int64
	for _, v := range values {
		hi = max(hi, v)
	}
	var b strings.Builder
	for i := len(values); i < width; i++ {
		b.WriteRune(' ')
	}
	for _, v := range values {
		idx := 0
		if hi > 0 && v > 0 {
			idx = int((v*int64(len(sparkRunes)-1) + hi - 1) / hi)
		}
		b.WriteRune(sparkRunes[min(idx, len(sparkRunes)-1)])
	}
	return b.String()
}

// bar draws a horizontal bar of width cells, filled to frac (0..1).
func bar(s *themes.Styles, frac float64, width int, kind themes.Kind) string {
	if width <= 0 {
		return ""
	}
	frac = max(0, min(1, frac))
	full := int(frac*float64(width) + 0.5)
	if frac > 0 && full == 0 {
		full = 1
	}
	return s.Render(kind, strings.Repeat("█", full)) + s.BarEmpty.Render(strings.Repeat("░", width-full))
}

// series is a metric sampled in fixed buckets over a sliding window: the
// overview's throughput and queue depth.
type series struct {
	step    time.Duration
	buckets []int64
	start   time.Time // the first bucket's start
	// carry: a new bucket starts at the previous one's value (a level, such
	// as a queue's depth); otherwise at zero (a rate, such as throughput).
	carry bool
}

func newSeries(step time.Duration, n int, now time.Time) *series {
	return &series{step: step, buckets: make([]int64, n), start: now.Truncate(step).Add(-time.Duration(n-1) * step)}
}

// advance slides the window so that its last bucket holds now.
func (s *series) advance(now time.Time) {
	end := s.start.Add(time.Duration(len(s.buckets)) * s.step)
	for !now.Before(end) {
		last := s.buckets[len(s.buckets)-1]
		copy(s.buckets, s.buckets[1:])
		s.buckets[len(s.buckets)-1] = 0
		if s.carry {
			s.buckets[len(s.buckets)-1] = last
		}
		s.start = s.start.Add(s.step)
		end = end.Add(s.step)
	}
}

func (s *series) index(t time.Time) int {
	if t.Before(s.start) {
		return -1
	}
	i := int(t.Sub(s.start) / s.step)
	if i >= len(s.buckets) {
		return -1
	}
	return i
}

// add counts n at time t (ignored when outside the window).
func (s *series) add(t time.Time, n int64) {
	if i := s.index(t); i >= 0 {
		s.buckets[i] += n
	}
}

// set records a level at time t: the bucket keeps the latest.
func (s *series) set(t time.Time, v int64) {
	if i := s.index(t); i >= 0 {
		s.buckets[i] = v
	}
}

func (s *series) values() []int64 { return s.buckets }
