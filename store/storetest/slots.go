package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
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

	// A waiter in any process holds a shared lock on the waiting file, so
	// that a process with idle connections can tell it should close them.
	waitFile, checkFile *os.File

	mu      sync.Mutex
	held    []bool // slots this process holds: flock cannot tell, as one open file may lock twice
	closed  bool
	freed   chan struct{} // closed (and replaced) when this process frees a slot
	waiting int           // this process's waiters

	checkedAt  atomic.Int64 // unix nanoseconds of the last look at the waiting file
	sawWaiting atomic.Bool
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
	if s.waitFile, err = open("waiting"); err == nil {
		s.checkFile, err = open("waiting")
	}
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
	for _, f := range append(s.files, s.waitFile, s.checkFile) {
		if f != nil {
			f.Close()
		}
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
	switch {
	case d > 0 && s.waiting == 1:
		_ = syscall.Flock(int(s.waitFile.Fd()), syscall.LOCK_SH)
	case d < 0 && s.waiting == 0:
		_ = syscall.Flock(int(s.waitFile.Fd()), syscall.LOCK_UN)
	}
}

// waiters counts this process's waiters, for tests.
func (s *slots) waiters() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// wanted reports whether a process waits for a slot. Pools ask on every
// release of a connection, so the answer is kept for 10 ms: a busy pool
// asks the kernel at most 100 times a second.
func (s *slots) wanted() bool {
	now := time.Now().UnixNano()
	if now-s.checkedAt.Load() < int64(10*time.Millisecond) {
		return s.sawWaiting.Load()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.waiting > 0
	if !w && !s.closed {
		fd := int(s.checkFile.Fd())
		if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = syscall.Flock(fd, syscall.LOCK_UN)
		} else {
			w = true
		}
	}
	s.sawWaiting.Store(w)
	s.checkedAt.Store(now)
	return w
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
