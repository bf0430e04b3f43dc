package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// report prints every target's figures by level, then how ours compares
// with each peer.
func report(targets []target, byTarget [][]result, s settings) {
	fmt.Printf("bench-chat: scripted model at zero latency, one get-customer call + text per request, every run of ours logged;\n"+
		"each figure the median of %d alternating rounds of %s per level and server (peak RSS: the highest)\n\n", s.rounds, s.dur)
	fmt.Printf("%-9s %5s %10s %10s %10s %7s %12s   %s\n", "server", "conc", "req/s", "p50", "p99", "errors", "peak RSS", "CPU per request: server / postgres / load   req/s | p99 (ms) of each round")
	for l := range s.levels {
		for i, t := range targets {
			printRow(t.name, byTarget[i][l])
		}
	}
	fmt.Println()
	ours := byTarget[0]
	for i := 1; i < len(targets); i++ {
		for l, theirs := range byTarget[i] {
			fmt.Printf("concurrency %2d: invoiced/%s requests/s %.2fx, p99 %s vs %s (%.2fx), peak RSS %.2fx of the %s's\n",
				ours[l].Concurrency, targets[i].name, ours[l].RPS/theirs.RPS,
				ours[l].P99.Round(10*time.Microsecond), theirs.P99.Round(10*time.Microsecond), float64(ours[l].P99)/float64(theirs.P99),
				float64(ours[l].PeakRSSKiB)/float64(theirs.PeakRSSKiB), targets[i].name)
		}
	}
}

func printRow(name string, r result) {
	rounds := make([]string, 0, 2*len(r.Rounds)+1)
	for _, v := range r.Rounds {
		rounds = append(rounds, strconv.Itoa(int(v)))
	}
	rounds = append(rounds, "|")
	for _, p := range r.RoundsP99 {
		rounds = append(rounds, strconv.FormatFloat(float64(p)/float64(time.Millisecond), 'f', 1, 64))
	}
	fmt.Printf("%-9s %5d %10.0f %10s %10s %7d %9.1f MiB   %s / %s / %s   %s\n", name, r.Concurrency, r.RPS,
		r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Errors, float64(r.PeakRSSKiB)/1024,
		r.CPUServer.Round(time.Microsecond), r.CPUPostgres.Round(time.Microsecond), r.CPULoad.Round(time.Microsecond),
		strings.Join(rounds, " "))
}
