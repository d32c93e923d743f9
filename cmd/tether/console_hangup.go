package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
)

// terminalCheckEvery is how often the console asks whether its terminal is
// still there.
const terminalCheckEvery = time.Second

// untilTerminalGone returns a context that also ends when the console's
// terminal (out) goes away, so that the console quits as after q: the agent
// API it serves stops, the database closes.
//
// Two ways, since the kernel tells only the terminal's session leader:
//
//   - SIGHUP, which a console started directly by its terminal receives
//     (it is the session leader, or the leader died and passed it on).
//     Without a handler SIGHUP would kill the process before any of that;
//     serve alone takes it as "reload".
//   - the terminal no longer answering as one: a hung-up terminal refuses
//     every ioctl (EIO). Started through make, the console never hears of
//     the hangup: make, the session leader, catches SIGHUP and waits for
//     its child forever, which waits for keys that never come. Bubble Tea
//     does read end of file from a hung-up terminal, but takes it as the
//     end of input, not of the program; and wrapping the input to watch
//     for it would hand $EDITOR (tea.ExecProcess) a pipe for a terminal.
//
// Once the terminal is gone, SIGHUP is ignored: a later one (from a
// session leader that exits, say) must not kill the process halfway
// through that shutdown. stop releases what untilTerminalGone holds.
func untilTerminalGone(ctx context.Context, out io.Writer) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	gone := func() {
		signal.Ignore(syscall.SIGHUP)
		cancel()
	}
	var check <-chan time.Time // nil: out is not a terminal to watch
	var ticker *time.Ticker
	var fd uintptr
	if f, isFile := out.(*os.File); isFile && term.IsTerminal(f.Fd()) {
		fd = f.Fd()
		ticker = time.NewTicker(terminalCheckEvery)
		check = ticker.C
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				gone()
				return
			case <-check:
				if !term.IsTerminal(fd) {
					gone()
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel()
		<-done
		signal.Stop(hup)
	}
}
