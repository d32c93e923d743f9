package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// terminal is a program running in a pseudo terminal, as a person's
// terminal emulator would run it: what it writes is collected, its escape
// sequences taken out, so that a benchmark can wait for a text to appear on
// the screen.
type terminal struct {
	cmd  *exec.Cmd
	ptmx *os.File

	mu      sync.Mutex
	text    bytes.Buffer // the output without its escape sequences
	changed chan struct{}
	done    chan struct{}
}

// startTerminal starts cmd in a new pseudo terminal of cols x rows, as the
// controlling terminal of a session of its own.
func startTerminal(cmd *exec.Cmd, cols, rows int) (*terminal, error) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open a pseudo terminal: %w", err)
	}
	fd := int(ptmx.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptmx.Close()
		return nil, fmt.Errorf("unlock the pseudo terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		ptmx.Close()
		return nil, fmt.Errorf("name the pseudo terminal: %w", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptmx.Close()
		return nil, err
	}
	defer tty.Close()
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}); err != nil {
		ptmx.Close()
		return nil, fmt.Errorf("size the pseudo terminal: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		ptmx.Close()
		return nil, err
	}
	t := &terminal{cmd: cmd, ptmx: ptmx, changed: make(chan struct{}, 1), done: make(chan struct{})}
	go t.read()
	return t, nil
}

// escapes are the terminal's control sequences: CSI, OSC, DCS and APC
// strings, two-byte escapes, and the C0 controls but for the newline.
var escapes = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P_^][^\x07\x1b]*(\x07|\x1b\\)|\x1b[ -/]*[0-~]|[\x00-\x09\x0b-\x1f\x7f]`)

func (t *terminal) read() {
	defer close(t.done)
	buf := make([]byte, 64<<10)
	var partial []byte // an escape sequence cut by the read
	for {
		n, err := t.ptmx.Read(buf)
		if n > 0 {
			data := append(partial, buf[:n]...)
			partial = nil
			if i := bytes.LastIndexByte(data, 0x1b); i >= 0 && len(data)-i < 64 && !escapes.Match(data[i:]) {
				data, partial = data[:i], append([]byte(nil), data[i:]...)
			}
			t.mu.Lock()
			t.text.Write(escapes.ReplaceAll(data, nil))
			t.mu.Unlock()
			select {
			case t.changed <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return
		}
	}
}

// mark is a position in the output: waitFor looks only after it.
func (t *terminal) mark() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.text.Len()
}

// waitFor waits until every one of texts has appeared in the output after
// from, and returns when the last of them did.
func (t *terminal) waitFor(from int, timeout time.Duration, texts ...string) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		t.mu.Lock()
		out := t.text.Bytes()[from:]
		all := true
		for _, s := range texts {
			all = all && bytes.Contains(out, []byte(s))
		}
		t.mu.Unlock()
		if all {
			return time.Now(), nil
		}
		select {
		case <-t.changed:
		case <-t.done:
			return time.Time{}, fmt.Errorf("the program ended before showing %q:\n%s", texts, t.tail())
		case <-deadline:
			return time.Time{}, fmt.Errorf("%q not shown within %s:\n%s", texts, timeout, t.tail())
		}
	}
}

// tail is the end of the output, for errors.
func (t *terminal) tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.text.Bytes()
	return string(b[max(0, len(b)-2000):])
}

// keys types s.
func (t *terminal) keys(s string) error {
	_, err := t.ptmx.Write([]byte(s))
	return err
}

// close ends the program (SIGTERM, then SIGKILL) and the terminal.
func (t *terminal) close() {
	_ = t.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() {
		_ = t.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = t.cmd.Process.Kill()
		<-exited
	}
	t.ptmx.Close()
	<-t.done
}

// procStatus reads a figure in kB of /proc/PID/status (VmRSS, VmHWM) in MB.
func procStatus(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
	}
	var kb float64
	fmt.Sscan(string(m[1]), &kb)
	return kb / 1024, nil
}
