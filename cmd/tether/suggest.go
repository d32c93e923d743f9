package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// withSuggestion turns a mistyped command or flag into one sentence that
// offers what was probably meant: cobra's own "Did you mean this?" block
// (a list of tab-indented lines, which the terminal-safe error printer
// would show as literal \t) becomes "(did you mean cluster?)", and an
// unknown flag or subcommand, for which cobra suggests nothing, gets the
// closest of cmd's own.
func withSuggestion(cmd *cobra.Command, msg string) string {
	if head, block, ok := strings.Cut(msg, "\n\nDid you mean this?\n"); ok {
		var names []string
		for _, l := range strings.Split(block, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				names = append(names, l)
			}
		}
		return didYouMean(strings.TrimSpace(head), names)
	}
	if cmd == nil {
		return msg
	}
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		visit := func(f *pflag.Flag) {
			if !f.Hidden && closeEnough(name, f.Name) {
				names = append(names, "--"+f.Name)
			}
		}
		cmd.Flags().VisitAll(visit)
		return didYouMean(msg, names)
	}
	// groupCommand's "unknown command "lst" for "tether cluster"".
	var typed string
	if _, err := fmt.Sscanf(msg, "unknown command %q for", &typed); err == nil && typed != "" {
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's own default for the root's
		}
		return didYouMean(msg, cmd.SuggestionsFor(typed))
	}
	return msg
}

// didYouMean appends the names to msg as a question, or returns msg as it is.
func didYouMean(msg string, names []string) string {
	if len(names) == 0 {
		return msg
	}
	return strings.TrimSuffix(msg, ".") + " (did you mean " + strings.Join(names, " or ") + "?)"
}

// closeEnough reports whether a typed flag name is probably a slip for
// name: one is the other with a letter or two more (--namespace for
// --namespaces), or they are at most two edits apart.
func closeEnough(typed, name string) bool {
	if typed == name || len(typed) < 2 {
		return false
	}
	if strings.HasPrefix(name, typed) && len(name)-len(typed) <= 2 ||
		strings.HasPrefix(typed, name) && len(typed)-len(name) <= 2 {
		return true
	}
	return editDistance(typed, name) <= 2
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
