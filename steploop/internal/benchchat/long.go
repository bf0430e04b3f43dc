package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Long-conversation benchmark (`make bench-chat-long`): what a turn costs
// on a conversation at message 400 (it holds 400 messages) against one at
// message 2 (its first question and answer), and a new conversation's
// first turn, every request in last-message mode ({id, message}), the
// same scripted turn as bench-chat's. The conversations are clones of one
// built through the API; each is used for exactly one turn. Rounds
// alternate the phases' order, and each figure is the median of its
// rounds.
//
// Settings besides bench-chat's: BENCH_LONG_TURNS (turns per phase and
// round, default 1000), BENCH_LONG_CONC (concurrency, default 1: p50 is
// then what a turn takes, not how long it queued behind others on two
// cores),
// BENCH_CONTEXT_BUDGET (INVOICED_CHAT_CONTEXT_BUDGET of the server, in
// bytes; default 8000, so that the turn at message 400 reads and sends its
// newest dozen turns, as a turn of any conversation longer than that
// does; "server" leaves the server's default of 200,000, within which this
// whole conversation fits and is read and sent every turn).
const longAt = 400

func runLong() error {
	s, err := readSettings()
	if err != nil {
		return err
	}
	turns, err := intSetting("BENCH_LONG_TURNS", 1000)
	if err != nil {
		return err
	}
	conc, err := intSetting("BENCH_LONG_CONC", 1)
	if err != nil {
		return err
	}
	var serverEnv []string
	budget := os.Getenv("BENCH_CONTEXT_BUDGET")
	switch budget {
	case "server":
		budget = "the server's default"
	case "":
		budget = "8000"
		fallthrough
	default:
		serverEnv = append(serverEnv, "INVOICED_CHAT_CONTEXT_BUDGET="+budget)
	}
	env, err := newBenchEnv(s.admin, serverEnv...)
	if err != nil {
		return err
	}
	defer env.close()
	seed, err := buildSeed(env.ours, longAt)
	if err != nil {
		return err
	}
	phases, err := measurePhases(env, seed, s.rounds, turns, conc)
	if err != nil {
		return err
	}
	reportLong(phases, s.rounds, turns, conc, budget)
	return nil
}

func intSetting(key string, def int) (int, error) {
	v := os.Getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s: %q is not a positive integer", key, v)
	}
	return n, nil
}

// lastTurn is a last-message request: a new user message for conversation id.
func lastTurn(id string) string {
	return fmt.Sprintf(`{"id":%q,"message":{"id":%q,"role":"user","parts":[{"type":"text","text":"look up the customer again"}]}}`,
		id, strings.ReplaceAll(uuid.NewString(), "-", ""))
}

// buildSeed drives one conversation through the API, one turn after
// another, until it holds n messages.
func buildSeed(t target, n int) (string, error) {
	id := "seed-" + strings.ReplaceAll(uuid.NewString(), "-", "")
	c := &chatClient{addr: strings.TrimPrefix(strings.SplitN(t.endpoint, "/v1", 2)[0], "http://"), path: "/v1/chat", token: t.token}
	defer c.close()
	for i := 0; i < n/2; i++ {
		if err := c.chat(lastTurn(id)); err != nil {
			return "", fmt.Errorf("building the long conversation, turn %d: %w", i, err)
		}
	}
	return id, nil
}

// phase is one kind of turn, and its results by round.
type phase struct {
	name    string
	at      int // messages the conversation holds before the turn
	results []result
}

// measurePhases measures every phase in every round, alternating their
// order, each on conversations of its own.
func measurePhases(env *benchEnv, seed string, rounds, turns, conc int) ([]*phase, error) {
	phases := []*phase{{name: "new conversation", at: 0}, {name: "turn at message 2", at: 2}, {name: "turn at message 400", at: longAt}}
	for r := 0; r < rounds; r++ {
		for k := range phases {
			p := phases[k]
			if r%2 == 1 {
				p = phases[len(phases)-1-k]
			}
			ids, err := cloneConversations(env.dbURL, seed, fmt.Sprintf("r%d-%d-", r, p.at), p.at, turns)
			if err != nil {
				return nil, err
			}
			res, err := measureWith(env.ours, conc, time.Hour, turnsOn(ids))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			p.results = append(p.results, res)
		}
	}
	return phases, nil
}

// turnsOn gives each conversation of ids one turn, shared out among the
// workers.
func turnsOn(ids []string) bodies {
	var next atomic.Int64
	return func(int) (string, bool) {
		i := int(next.Add(1)) - 1
		if i >= len(ids) {
			return "", false
		}
		return lastTurn(ids[i]), true
	}
}

// cloneConversations makes n copies of seed's first `at` messages under
// ids starting with prefix (with at 0, n ids of conversations that do not
// exist yet), then analyses the tables as autovacuum would have.
func cloneConversations(dbURL, seed, prefix string, at, n int) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d-%s", prefix, i, uuid.NewString()[:8])
	}
	if at == 0 {
		return ids, nil
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		WITH c AS (
			INSERT INTO conversations (id, owner_id)
			SELECT n.id, s.owner_id FROM conversations s, unnest($2::text[]) AS n(id) WHERE s.id = $1
			RETURNING id
		)
		INSERT INTO conversation_messages (conversation_id, position, id, role, parts, metadata, model_chars, chars_before)
		SELECT c.id, m.position, m.id, m.role, m.parts, m.metadata, m.model_chars, m.chars_before
		  FROM c, conversation_messages m WHERE m.conversation_id = $1 AND m.position < $3`, seed, ids, at)
	if err != nil {
		return nil, fmt.Errorf("cloning conversations: %w", err)
	}
	_, err = conn.Exec(ctx, `VACUUM ANALYZE conversations, conversation_messages`)
	return ids, err
}

func reportLong(phases []*phase, rounds, turns, conc int, budget string) {
	fmt.Printf("bench-chat-long: %d turns per phase and round in last-message mode at concurrency %d, context budget %s;\n"+
		"each figure the median of %d rounds, the phases' order alternating\n\n", turns, conc, budget, rounds)
	fmt.Printf("%-22s %10s %10s %10s %7s   %s\n", "phase", "req/s", "p50", "p99", "errors", "CPU per request: server / postgres / load   req/s of each round")
	meds := make([]result, len(phases))
	for i, p := range phases {
		meds[i] = median(p.results)
		r := meds[i]
		var rs []string
		for _, v := range r.Rounds {
			rs = append(rs, strconv.Itoa(int(v)))
		}
		fmt.Printf("%-22s %10.0f %10s %10s %7d   %s / %s / %s   %s\n", p.name, r.RPS, r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond),
			r.Errors, r.CPUServer.Round(time.Microsecond), r.CPUPostgres.Round(time.Microsecond), r.CPULoad.Round(time.Microsecond), strings.Join(rs, " "))
	}
	fmt.Println()
	at400 := meds[len(meds)-1]
	for _, i := range []int{1, 0} {
		fmt.Printf("turn at message 400 / %s: server CPU per request %.2fx, p50 %.2fx\n", phases[i].name,
			float64(at400.CPUServer)/float64(meds[i].CPUServer), float64(at400.P50)/float64(meds[i].P50))
	}
}
