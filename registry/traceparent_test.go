package registry

import "testing"

func TestValidTraceparent(t *testing.T) {
	for s, want := range map[string]bool{
		"": true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":  true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00":  true,
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01":  false, // upper case
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":  false, // unknown version
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01":  false, // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01":  false, // zero span id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x": false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01":  false,
		"not a trace": false,
	} {
		if got := ValidTraceparent(s); got != want {
			t.Errorf("ValidTraceparent(%q) = %v, want %v", s, got, want)
		}
	}
}
