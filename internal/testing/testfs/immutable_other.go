//go:build !linux

package testfs

import "errors"

func setImmutable(string, bool) error {
	return errors.New("the immutable attribute is set only on Linux here")
}
