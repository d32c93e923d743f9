// Package humantime renders ages and time spans the same way everywhere
// people read them: the CLI's tables and the console's views say "5m ago"
// or "in 24h" for the same instant, never one "5m" and the other "4m".
package humantime

import (
	"strconv"
	"time"
)

// Duration is d in its largest whole unit: 42s, 5m, 3h (up to 47h), 2d.
// Spans are truncated, so an age never runs ahead of the clock; a negative d
// is shown as its size.
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/(24*time.Hour))) + "d"
}

// Round rounds a span ahead (a lifetime just granted) to the unit Duration
// shows it in, so that a 30-day credential issued a moment ago says "in
// 30d", not "in 29d".
func Round(d time.Duration) time.Duration {
	switch {
	case d >= 48*time.Hour:
		return d.Round(24 * time.Hour)
	case d >= time.Hour:
		return d.Round(time.Hour)
	case d >= time.Minute:
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

// Relative is t seen from now: "12s ago", or "in 3d" for a time ahead. The
// zero time is the caller's to render ("-", "never").
func Relative(now, t time.Time) string {
	if t.After(now) {
		if d := Round(t.Sub(now)); d > 0 {
			return "in " + Duration(d)
		}
		// Under half a second ahead is two clocks' disagreement (a
		// record the server stamped, seen from a machine whose clock is
		// corrected by a measured skew), not the future: it is now.
		return Duration(0) + " ago"
	}
	return Duration(now.Sub(t)) + " ago"
}

// Wait is a measured span such as a queue wait: under a second in
// milliseconds, under a minute to a tenth of a second (a wait of 1.9s is not
// "1s"), longer ones as Duration.
func Wait(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(float64(d/(100*time.Millisecond))/10, 'f', 1, 64) + "s"
	}
	return Duration(d)
}
