//go:build linux

package server

import (
	"os"
	"sync"
	"syscall"
)

// parkSupported: parked polls wait in an epoll instance of their own.
const parkSupported = true

// readiness waits for every parked poll's connection at once: an epoll
// instance (one-shot, level-triggered registrations) that is itself waited
// on in the runtime's network poller, so that no goroutine or thread waits
// per connection, and one goroutine, blocked in the poller, reports what
// became readable. A connection is also registered with the runtime's
// poller (net/http's conn); a file descriptor may sit in both, and the
// runtime's edge is consumed by the next read after the poll is handed back.
type readiness struct {
	f    *os.File
	raw  syscall.RawConn
	mu   sync.Mutex
	byFD map[int32]*parkedPoll
}

const readinessEvents = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT

func newReadiness() (*readiness, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return nil, os.NewSyscallError("setnonblock", err)
	}
	f := os.NewFile(uintptr(fd), "tether-parked-polls")
	raw, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	r := &readiness{f: f, raw: raw, byFD: map[int32]*parkedPoll{}}
	go r.loop()
	return r, nil
}

// loop reports readable connections until the instance is closed.
func (r *readiness) loop() {
	events := make([]syscall.EpollEvent, 256)
	var ready []*parkedPoll
	for {
		n := 0
		err := r.raw.Read(func(fd uintptr) bool {
			var err error
			n, err = syscall.EpollWait(int(fd), events, 0)
			if err != nil {
				n = 0
			}
			return n > 0 // none: wait in the runtime's poller
		})
		if err != nil {
			return // closed
		}
		r.mu.Lock()
		for _, ev := range events[:n] {
			if p := r.byFD[ev.Fd]; p != nil {
				ready = append(ready, p)
			}
		}
		r.mu.Unlock()
		for i, p := range ready {
			p.onReadable()
			ready[i] = nil
		}
		ready = ready[:0]
	}
}

// watch registers p's connection (p.fd); p.mu is held.
func (r *readiness) watch(p *parkedPoll) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	fd := int32(p.fd)
	ev := syscall.EpollEvent{Events: readinessEvents, Fd: fd}
	if err := r.ctl(syscall.EPOLL_CTL_ADD, p.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	r.byFD[fd] = p
	return nil
}

// rearm waits for p's connection again after a report that found it not
// readable; p.mu is held.
func (r *readiness) rearm(p *parkedPoll) error {
	ev := syscall.EpollEvent{Events: readinessEvents, Fd: int32(p.fd)}
	if err := r.ctl(syscall.EPOLL_CTL_MOD, p.fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// unwatch takes p's connection off, before it is closed or handed back;
// p.mu is held.
func (r *readiness) unwatch(p *parkedPoll) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.ctl(syscall.EPOLL_CTL_DEL, p.fd, &syscall.EpollEvent{})
	if r.byFD[int32(p.fd)] == p {
		delete(r.byFD, int32(p.fd))
	}
}

func (r *readiness) ctl(op, fd int, ev *syscall.EpollEvent) error {
	var err error
	cerr := r.raw.Control(func(epfd uintptr) { err = syscall.EpollCtl(int(epfd), op, fd, ev) })
	if cerr != nil {
		return cerr
	}
	return err
}

func (r *readiness) close() { _ = r.f.Close() }

// peek reports whether a byte is waiting on fd (n 1), the peer closed its
// side (n 0), or neither (EAGAIN), leaving the byte where it is.
func peek(fd uintptr) (int, error) {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n, err
}
