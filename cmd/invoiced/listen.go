package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listen opens addr, the value of setting, for a server. A refusal names
// the setting, the address and the cause in words: the port taken (by
// another serve, say), a host that is not this machine's, a port below
// 1024 without the right to bind it.
func listen(setting, addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s is in use by another process (another invoiced serve?): stop it, or set %s to a free address", setting, addr, setting)
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return nil, fmt.Errorf("%s %s names an address this machine does not have: set %s to one of its addresses, or :PORT for all of them", setting, addr, setting)
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("%s %s is a port this user may not bind (below 1024): set %s to a port from 1024 up", setting, addr, setting)
	}
	return nil, fmt.Errorf("%s %s cannot be listened on: %w", setting, addr, err)
}
