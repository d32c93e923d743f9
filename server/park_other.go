//go:build !linux

package server

import "errors"

// parkSupported: polls stay held inside net/http on this platform (parked
// polls wait in an epoll instance: park_linux.go).
const parkSupported = false

type readiness struct{}

func newReadiness() (*readiness, error) { return nil, errors.ErrUnsupported }

func (r *readiness) watch(*parkedPoll) error { return errors.ErrUnsupported }
func (r *readiness) rearm(*parkedPoll) error { return errors.ErrUnsupported }
func (r *readiness) unwatch(*parkedPoll)     {}
func (r *readiness) close()                  {}

func peek(fd uintptr) (int, error) { return 0, errors.ErrUnsupported }
