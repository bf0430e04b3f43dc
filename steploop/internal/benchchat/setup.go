package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/invoiced/invoiced/internal/benchkit"
)

// benchEnv is a fresh database, the customer the tool looks up, a clerk's
// token and invoiced serving on it with the scripted model.
type benchEnv struct {
	root, tmp, admin string
	dbName, dbURL    string
	customerID       uuid.UUID
	ours             target
	srv              *exec.Cmd
}

// newBenchEnv builds invoiced and serves it on a new database, with
// serverEnv added to its environment.
func newBenchEnv(admin string, serverEnv ...string) (*benchEnv, error) {
	ctx := context.Background()
	e := &benchEnv{admin: admin, dbName: "invoiced_bench_" + strings.ReplaceAll(uuid.NewString()[:8], "-", ""), customerID: uuid.New()}
	var err error
	if e.root, err = repoRoot(); err != nil {
		return nil, err
	}
	if e.tmp, err = os.MkdirTemp("", "bench-chat"); err != nil {
		return nil, err
	}
	if e.dbURL, err = benchkit.CreateDB(ctx, admin, e.dbName); err != nil {
		e.close()
		return nil, err
	}
	if err := e.serve(ctx, serverEnv); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *benchEnv) serve(ctx context.Context, serverEnv []string) error {
	bin := filepath.Join(e.tmp, "invoiced")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/invoiced").CombinedOutput(); err != nil {
		return fmt.Errorf("build: %v: %s", err, out)
	}
	out, err := runEnv(bin, []string{"DATABASE_URL=" + e.dbURL}, "users", "create", "--username", "bench", "--role", "clerk")
	if err != nil {
		return fmt.Errorf("create user: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	token := lines[len(lines)-1]
	// The script is written once the customer exists, so the server
	// starts after it.
	if err := benchkit.SeedCustomer(ctx, e.dbURL, e.customerID); err != nil {
		return err
	}
	scriptPath := filepath.Join(e.tmp, "script.json")
	script := fmt.Sprintf(`{"default":[{"tool_calls":[{"name":"get-customer","input":{"customer_id":%q}}]},{"text":"Found it."}]}`, e.customerID)
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	e.srv = exec.Command(bin, "serve")
	e.srv.Env = append(append(os.Environ(), "DATABASE_URL="+e.dbURL, "INVOICED_ADDR=127.0.0.1:"+port,
		"INVOICED_MODEL_PROVIDER=scripted", "INVOICED_MODEL_SCRIPT="+scriptPath, "INVOICED_LOG_LEVEL=warn"), serverEnv...)
	e.srv.Env = append(e.srv.Env, strings.Fields(os.Getenv("BENCH_SERVER_ENV"))...)
	e.srv.Stdout, e.srv.Stderr = io.Discard, os.Stderr
	if err := e.srv.Start(); err != nil {
		return err
	}
	base := "http://127.0.0.1:" + port
	e.ours = target{name: "invoiced", endpoint: base + "/v1/chat", token: token, pid: e.srv.Process.Pid}
	return waitReady(base+"/readyz", 200)
}

func (e *benchEnv) close() {
	if e.srv != nil && e.srv.Process != nil {
		_ = e.srv.Process.Kill()
		_, _ = e.srv.Process.Wait()
	}
	if e.dbURL != "" {
		benchkit.DropDB(context.Background(), e.admin, e.dbName)
	}
	if e.tmp != "" {
		_ = os.RemoveAll(e.tmp)
	}
}

// target is a server under load.
type target struct {
	name, endpoint, token string
	pid                   int
}

// startPeer starts bench/peer's script; stop ends it. Its pinned packages
// are make's to install (with npm's fetch flags, as for the tests).
func startPeer(root, dbURL string, customerID uuid.UUID, script string) (target, func(), error) {
	peerDir := filepath.Join(root, "bench", "peer")
	if _, err := os.Stat(filepath.Join(peerDir, "node_modules", ".package-lock.json")); err != nil {
		return target{}, nil, errors.New("bench/peer's packages are not installed: run make bench-chat (it installs them), or BENCH_PEER=off")
	}
	pport, err := freePort()
	if err != nil {
		return target{}, nil, err
	}
	peer := exec.Command("node", script)
	peer.Dir = peerDir
	peer.Env = append(os.Environ(), "PORT="+pport, "DATABASE_URL="+dbURL, "BENCH_CUSTOMER_ID="+customerID.String())
	peer.Stdout, peer.Stderr = io.Discard, os.Stderr
	if err := peer.Start(); err != nil {
		return target{}, nil, err
	}
	stop := func() { _ = peer.Process.Kill(); _, _ = peer.Process.Wait() }
	pbase := "http://127.0.0.1:" + pport
	if err := waitReady(pbase+"/", 404); err != nil {
		stop()
		return target{}, nil, err
	}
	name := strings.TrimSuffix(script, ".mjs")
	if name == "server" {
		name = "peer"
	}
	return target{name: name, endpoint: pbase + "/api/chat", pid: peer.Process.Pid}, stop, nil
}

func waitReady(u string, want int) error {
	for i := 0; i < 200; i++ {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s never answered %d", u, want)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

func runEnv(bin string, env []string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}
