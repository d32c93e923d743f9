package registry

import (
	"slices"
	"strings"
	"testing"
)

// TestDeleteFromFinishedStatesOnly: a delete is offered for every terminal
// state and never for a job an agent may still hold or receive; the refusal
// names the state and says to cancel first.
func TestDeleteFromFinishedStatesOnly(t *testing.T) {
	got := finishedStates()
	want := []JobState{JobSucceeded, JobFailed, JobNoop, JobConflict, JobCanceled, JobExpired}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("deletable states %v, want %v", got, want)
	}
	err := notFinished(&Job{ID: "j-1", State: JobInProgress})
	if ErrorCode(err) != CodeJobNotFinished || !strings.Contains(err.Error(), "in_progress") || !strings.Contains(err.Error(), "cancel it first") {
		t.Fatalf("refusal %q (%s)", err, ErrorCode(err))
	}
}
