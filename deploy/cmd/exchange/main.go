// Command exchange runs the whole exchange in one process on its embedded
// defaults: `go run ./deploy/cmd/exchange` (make run). See README.md for
// the environment variables.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"blockspace.exchange/deploy/devstack"
	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/serve"
)

func main() {
	cfg, err := devstack.ConfigFromEnv(config.FromEnv())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := serve.NewLogger(cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	stack, err := devstack.Start(ctx, cfg, log)
	if err != nil {
		log.Error("start", "error", err)
		os.Exit(1)
	}
	stack.PrintBanner(os.Stdout)
	go func() {
		<-ctx.Done()
		stop() // a second signal ends the process at once
	}()
	if err := stack.Run(ctx); err != nil {
		log.Error("run", "error", err)
		os.Exit(1)
	}
	log.Info("stopped")
}
