package server

import (
	"log/slog"
	"net"
	"sync"
)

// LimitListener accepts at most max connections at once: past it, Accept
// waits until one closes (the kernel's backlog holds the newcomers), so a
// client that opens connections without end cannot take the process's
// file descriptors from its storage reads and its other clients. Each
// time the limit stops an accept, one warning says so.
func LimitListener(ln net.Listener, max int, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{}), log: log}
}

type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	log       *slog.Logger
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.log.Warn("the connection limit is reached: new connections wait until one closes; raise --max-connections (and the open-file limit, ulimit -n) if this load is expected",
			"max_connections", cap(l.slots))
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back once, on its first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
