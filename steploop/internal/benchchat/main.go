// Command benchchat is `make bench-chat` and `make bench-chat-long`.
//
// bench-chat: closed-loop load on POST /v1/chat with the scripted model at
// zero latency (each request one read tool call, a primary-key lookup,
// then a short text), at concurrency 1, 8 and 32; and the same load on the
// two peers in bench/peer: ai@7 streamText with its mock model and the
// same query, plain (server.mjs) and made resumable the documented way,
// with resumable-stream over Redis (resumable.mjs). It prints requests/s,
// p50/p99 latency and peak RSS of each server, and the ratios. Every run of
// ours is logged (ADR-0017), as in production.
//
// bench-chat-long (`benchchat long`): a turn at message 400 of a
// conversation against a turn at message 2 (a new conversation) and at
// message 4, in last-message mode, measured in one run (long.go).
//
// They are commands, not tests: timing targets are read off their output,
// never asserted.
//
// Settings: INVOICED_TEST_DATABASE_URL (a server whose user may CREATE
// DATABASE), BENCH_DURATION (per level, side and round, default 5s),
// BENCH_ROUNDS (default 3), BENCH_LEVELS (concurrency levels, default
// "1,8,32"), BENCH_PEER=off (measure invoiced alone, while working on it),
// REDIS_URL (the resumable peer's, default redis://127.0.0.1:6379),
// BENCH_SERVER_ENV (space-separated KEY=VALUE settings added to
// invoiced's environment, e.g. INVOICED_PPROF_ADDR=127.0.0.1:6060 to
// profile it).
//
// All servers run for the whole benchmark and are measured in alternating
// rounds at each level (ours, then the peers; then the other way round),
// and each figure is the median of its rounds: on a shared two-core
// machine whose speed drifts by tens of percent within a minute,
// measuring one side after the other would compare different machines.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	run := runChat
	if len(os.Args) > 1 && os.Args[1] == "long" {
		run = runLong
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-chat:", err)
		os.Exit(1)
	}
}

// settings are the BENCH_* environment variables.
type settings struct {
	admin    string
	dur      time.Duration
	levels   []int
	rounds   int
	withPeer bool
}

func readSettings() (settings, error) {
	s := settings{admin: os.Getenv("INVOICED_TEST_DATABASE_URL"), dur: 5 * time.Second, levels: []int{1, 8, 32}, rounds: 3, withPeer: true}
	if s.admin == "" {
		return s, errors.New("set INVOICED_TEST_DATABASE_URL to a PostgreSQL URL whose user may CREATE DATABASE")
	}
	if v := os.Getenv("BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return s, fmt.Errorf("BENCH_DURATION: %w", err)
		}
		s.dur = d
	}
	if v := os.Getenv("BENCH_LEVELS"); v != "" {
		s.levels = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return s, fmt.Errorf("BENCH_LEVELS: %q is not a positive integer", f)
			}
			s.levels = append(s.levels, n)
		}
	}
	if v := os.Getenv("BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("BENCH_ROUNDS: %q is not a positive integer", v)
		}
		s.rounds = n
	}
	switch os.Getenv("BENCH_PEER") {
	case "", "on":
	case "off":
		s.withPeer = false
	default:
		return s, errors.New("BENCH_PEER: must be on or off")
	}
	return s, nil
}

// runChat is bench-chat.
func runChat() error {
	s, err := readSettings()
	if err != nil {
		return err
	}
	env, err := newBenchEnv(s.admin)
	if err != nil {
		return err
	}
	defer env.close()
	targets := []target{env.ours}
	if s.withPeer {
		for _, script := range []string{"server.mjs", "resumable.mjs"} {
			peer, stop, err := startPeer(env.root, env.dbURL, env.customerID, script)
			if err != nil {
				return err
			}
			defer stop()
			targets = append(targets, peer)
		}
	}
	for _, t := range targets {
		if _, err := load(t, 8, time.Second); err != nil {
			return fmt.Errorf("%s: warm-up: %w", t.name, err)
		}
	}
	byTarget, err := measureLevels(targets, s)
	if err != nil {
		return err
	}
	report(targets, byTarget, s)
	return nil
}

// measureLevels measures every target at every level in alternating
// rounds, and returns each target's medians by level.
func measureLevels(targets []target, s settings) ([][]result, error) {
	byTarget := make([][]result, len(targets))
	for _, c := range s.levels {
		runs := make([][]result, len(targets))
		for r := 0; r < s.rounds; r++ {
			for k := range targets {
				i := k
				if r%2 == 1 {
					i = len(targets) - 1 - k
				}
				res, err := measureOne(targets[i], c, s.dur)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", targets[i].name, err)
				}
				runs[i] = append(runs[i], res)
			}
		}
		for i := range targets {
			byTarget[i] = append(byTarget[i], median(runs[i]))
		}
	}
	return byTarget, nil
}
