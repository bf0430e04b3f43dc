package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// slots is a counting semaphore shared by every process on this machine
// that opens it on the same directory: slot i is held by whoever holds an
// exclusive flock on file i. The kernel drops the locks of a process that
// dies, so a killed test binary never leaks a slot, and `go test ./...`,
// which runs several package binaries at once (-p, by default one per
// core), shares one bound however many there are.
type slots struct {
	files []*os.File // one open file per slot, opened once per process

	mu      sync.Mutex
	held    []bool // slots this process holds: flock cannot tell, as one open file may lock twice
	closed  bool
	freed   chan struct{} // closed (and replaced) when this process frees a slot
	waiting int           // this process's waiters
}

func openSlots(dir string, n int) (*slots, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o666)
	}
	s := &slots{held: make([]bool, n), freed: make(chan struct{})}
	var err error
	for i := 0; i < n && err == nil; i++ {
		var f *os.File
		if f, err = open(fmt.Sprintf("slot-%03d", i)); err == nil {
			s.files = append(s.files, f)
		}
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close lets go of the files, and so of the slots held: for tests, whose
// connections may still be closing.
func (s *slots) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files {
		f.Close()
	}
	s.closed = true
}

// limit keeps the first n slots only; call it before any acquire.
func (s *slots) limit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.files[n:] {
		f.Close()
	}
	s.files, s.held = s.files[:n], s.held[:n]
}

// tryAcquire takes a free slot numbered from or more, starting at a
// random one so that processes do not all probe the same files first.
func (s *slots) tryAcquire(from int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.files) - from
	start := rand.IntN(n)
	for k := range n {
		i := from + (start+k)%n
		if s.held[i] {
			continue
		}
		if syscall.Flock(int(s.files[i].Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			s.held[i] = true
			return i, true
		}
	}
	return 0, false
}

func (s *slots) release(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	_ = syscall.Flock(int(s.files[i].Fd()), syscall.LOCK_UN)
	s.held[i] = false
	close(s.freed)
	s.freed = make(chan struct{})
}

// acquire waits for a slot numbered from or more until ctx ends. A slot
// freed in this process wakes a waiter at once; one freed by another
// process is seen at the next poll, at most 50 ms later.
func (s *slots) acquire(ctx context.Context, from int) (release func(), err error) {
	if i, ok := s.tryAcquire(from); ok {
		return s.releaser(i), nil
	}
	s.setWaiting(+1)
	defer s.setWaiting(-1)
	wait := 2 * time.Millisecond
	for {
		s.mu.Lock()
		freed := s.freed
		s.mu.Unlock()
		if i, ok := s.tryAcquire(from); ok {
			return s.releaser(i), nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-freed:
			t.Stop()
		case <-t.C:
			wait = min(2*wait, 50*time.Millisecond)
		}
	}
}

func (s *slots) releaser(i int) func() {
	var once sync.Once
	return func() { once.Do(func() { s.release(i) }) }
}

func (s *slots) setWaiting(d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting += d
}

// waiters counts this process's waiters, for tests.
func (s *slots) waiters() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// inUse counts the slots held by any process, for messages.
func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, f := range s.files {
		if s.held[i] {
			n++
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		} else {
			n++
		}
	}
	return n
}
