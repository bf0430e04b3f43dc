package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// resetPeakRSS clears the kernel's high-water mark (Linux ≥ 4.0) so each
// level reports its own peak; where that fails the peak is cumulative.
func resetPeakRSS(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

func peakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// cpuTime is a process's user+system CPU so far (/proc/PID/stat fields 14
// and 15, in clock ticks of 10 ms on Linux).
func cpuTime(pid int) time.Duration { return statTicks(pid, 11, 12) }

// statTicks sums /proc/PID/stat's fields at the given indexes (counted
// from the state, field 3) as CPU time.
func statTicks(pid int, fields ...int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; fields count from after its ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(raw[i+1:]))
	var ticks int64
	for _, k := range fields {
		if k >= len(f) {
			return 0
		}
		n, _ := strconv.ParseInt(f[k], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// postgresCPU sums the CPU of every process named postgres: the backends
// serving the benchmark, the WAL writer and the checkpointer, and the
// children the postmaster has reaped (fields 16 and 17): without those, a
// backend that ends between two readings takes its CPU out of the sum,
// which then shrinks. With a remote database it is zero.
func postgresCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	var total time.Duration
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			total += statTicks(pid, 11, 12, 13, 14)
		}
	}
	return total
}
