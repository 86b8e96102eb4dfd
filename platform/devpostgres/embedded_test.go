package devpostgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestEmbeddedRestartKeepsData(t *testing.T) {
	t.Parallel()
	cfg := Config{DataDir: dataDir(t), Ephemeral: true}
	first := start(t, cfg)
	execSQL(t, first, "CREATE TABLE kept (id int); INSERT INTO kept VALUES (1), (2)")
	if err := first.Stop(t.Context()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := first.Stop(t.Context()); err != nil {
		t.Fatalf("second stop: %v", err)
	}

	second := start(t, cfg)
	if second.Port() != first.Port() {
		t.Errorf("port after restart = %d, want the remembered %d", second.Port(), first.Port())
	}
	if got := count(t, second, "kept"); got != 2 {
		t.Errorf("rows after restart = %d, want 2", got)
	}
}

func TestEmbeddedListensOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	e := start(t, Config{DataDir: dataDir(t), Ephemeral: true})
	conn, err := pgx.Connect(t.Context(), e.URL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	want := map[string]string{"listen_addresses": "127.0.0.1", "server_encoding": "UTF8", "fsync": "off"}
	for setting, value := range want {
		var got string
		if err := conn.QueryRow(t.Context(), "SELECT current_setting($1)", setting).Scan(&got); err != nil {
			t.Fatalf("%s: %v", setting, err)
		}
		if got != value {
			t.Errorf("%s = %q, want %q", setting, got, value)
		}
	}
}

// Extra settings reach the server and override the package's own: a
// preloaded library is what CREATE EXTENSION pg_stat_statements needs.
func TestEmbeddedExtraSettings(t *testing.T) {
	t.Parallel()
	e := start(t, Config{DataDir: dataDir(t), Ephemeral: true, Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements", "max_connections": "50",
	}})
	conn, err := pgx.Connect(t.Context(), e.URL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	var preload, maxConns string
	if err := conn.QueryRow(t.Context(), "SELECT current_setting('shared_preload_libraries'), current_setting('max_connections')").Scan(&preload, &maxConns); err != nil {
		t.Fatal(err)
	}
	if preload != "pg_stat_statements" || maxConns != "50" {
		t.Errorf("shared_preload_libraries %q, max_connections %q; want pg_stat_statements and 50", preload, maxConns)
	}
	if _, err := conn.Exec(t.Context(), "CREATE EXTENSION pg_stat_statements"); err != nil {
		t.Fatal(err)
	}
	var calls int64
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_stat_statements").Scan(&calls); err != nil {
		t.Fatalf("read pg_stat_statements: %v", err)
	}
}

func TestEmbeddedMovesOffBusyRememberedPort(t *testing.T) {
	t.Parallel()
	cfg := Config{DataDir: dataDir(t), Ephemeral: true}
	first := start(t, cfg)
	if err := first.Stop(t.Context()); err != nil {
		t.Fatalf("stop: %v", err)
	}
	busy := listen(t, first.Port())
	defer busy.Close()

	second := start(t, cfg)
	if second.Port() == first.Port() || second.Port() == systemPort {
		t.Errorf("port = %d, want neither the busy %d nor %d", second.Port(), first.Port(), systemPort)
	}
	execSQL(t, second, "SELECT 1")
}

func TestEmbeddedRecoversStaleLock(t *testing.T) {
	tests := []struct {
		name string
		// leave ends the first server and leaves a postmaster.pid behind,
		// given the file's content while the server ran.
		leave func(t *testing.T, e *Server, pidFile string, content []byte)
	}{
		{"postmaster killed", func(t *testing.T, e *Server, _ string, _ []byte) {
			if err := syscall.Kill(e.Pid(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-e.Done()
		}},
		{"pid reused by another process", func(t *testing.T, e *Server, pidFile string, content []byte) {
			if err := e.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			other := sleeper(t)
			rest := content[strings.IndexByte(string(content), '\n'):]
			if err := os.WriteFile(pidFile, append([]byte(strconv.Itoa(other)), rest...), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{DataDir: dataDir(t), Ephemeral: true}
			created := start(t, cfg) // an ephemeral initdb skips its slow fsync
			if err := created.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			// Durable settings from here on: an asynchronous commit may be
			// lost with a killed server, which is what Ephemeral accepts.
			cfg.Ephemeral = false
			first := start(t, cfg)
			execSQL(t, first, "CREATE TABLE kept (id int); INSERT INTO kept VALUES (1)")
			pidFile := layout{root: cfg.DataDir}.pidFile()
			content, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			tt.leave(t, first, pidFile, content)
			if _, err := os.Stat(pidFile); err != nil {
				t.Fatalf("precondition: postmaster.pid should be left behind: %v", err)
			}

			second := start(t, cfg)
			if got := count(t, second, "kept"); got != 1 {
				t.Errorf("rows after recovery = %d, want 1", got)
			}
		})
	}
}

func TestEmbeddedRefusesDataDirInUse(t *testing.T) {
	t.Parallel()
	cfg := Config{DataDir: dataDir(t), Ephemeral: true}
	start(t, cfg)
	_, err := Start(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "in use by postgres pid") {
		t.Fatalf("second start on the same dir: err = %v, want in use", err)
	}
}

// The postmaster must not outlive the process that started it. A child test
// process starts a cluster and is killed with SIGKILL, which gives it no
// chance to clean up; the server must then go away by itself, and a new
// start on the same directory must work.
func TestEmbeddedDiesWithItsParent(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestEmbeddedHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil || pid <= 0 {
		t.Fatalf("read postmaster pid from helper: pid %d, %v", pid, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	if err := poll(t.Context(), func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }); err != nil {
		t.Fatalf("postmaster %d still running after its parent died: %v", pid, err)
	}
	e := start(t, Config{DataDir: dir, Ephemeral: true})
	execSQL(t, e, "SELECT 1")
}

// helperEnv carries the data dir to the helper process.
const helperEnv = "POSTGRES_EMBEDDED_HELPER_DIR"

// TestEmbeddedHelperProcess is the child of TestEmbeddedDiesWithItsParent:
// it starts a cluster, prints the postmaster's pid and waits to be killed.
func TestEmbeddedHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestEmbeddedDiesWithItsParent")
	}
	e, err := Start(context.Background(), Config{DataDir: dir, Ephemeral: true})
	if err != nil {
		fmt.Println(0)
		t.Fatal(err)
	}
	fmt.Println(e.Pid())
	select {}
}

// listen occupies a port on 127.0.0.1.
func listen(t *testing.T, port int) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("occupy port %d: %v", port, err)
	}
	return l
}

// sleeper starts a process that lives until the test ends and returns its pid.
func sleeper(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}
