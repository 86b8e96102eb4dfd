package loadtest

import (
	"context"
	"io"
	"log/slog"
	"os"

	"blockspace.exchange/deploy/devstack"
	"blockspace.exchange/platform/config"
)

// StartStack starts a dev stack in a new temporary directory, every
// listener (the dev chain's JSON-RPC too) on a free loopback port, with
// env added to (or overriding) that configuration. stop ends the stack
// and removes the directory. The stack logs at LOG_LEVEL (warn unless env
// sets it) to log, io.Discard for none.
func StartStack(ctx context.Context, env map[string]string, log io.Writer) (*devstack.Stack, func(), error) {
	return StartStackWith(ctx, env, nil, log)
}

// StartStackWith is StartStack with configure, when not nil, applied to
// the configuration read from env before the stack starts: for settings
// no variable carries, such as Config.PostgresSettings.
func StartStackWith(ctx context.Context, env map[string]string, configure func(*devstack.Config), log io.Writer) (*devstack.Stack, func(), error) {
	dir, err := os.MkdirTemp("", "exchange-loadtest-")
	if err != nil {
		return nil, nil, err
	}
	// The private cluster runs as the postgres OS user when we are root.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	vars := map[string]string{
		"DATA_DIR": dir, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "KAFKA_ADDR": "127.0.0.1:0",
		"ORIGINATOR_ADDR": "127.0.0.1:0", "SEARCHER_ADDR": "127.0.0.1:0", "ORDERFLOW_ADDR": "127.0.0.1:0",
		"CHAIN_ADDR": "127.0.0.1:0", "LOG_LEVEL": "warn", "MAX_IN_FLIGHT": "100000",
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := devstack.ConfigFromEnv(config.FromMap(vars))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	if configure != nil {
		configure(&cfg)
	}
	stack, err := devstack.Start(ctx, cfg, slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: cfg.LogLevel})))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- stack.Run(runCtx) }()
	return stack, func() {
		stopRun()
		<-done
		os.RemoveAll(dir)
	}, nil
}
