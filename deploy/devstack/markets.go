package devstack

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/ingress"
	"blockspace.exchange/ingress/devkit"
	"blockspace.exchange/matcher"
	"blockspace.exchange/platform/environment"
)

// devClock returns the environment with the dev stack's genesis and slot
// length: DEV_GENESIS when set, else the genesis kept in DATA_DIR from
// the first start (so a restart continues the same slots), else now.
func devClock(cfg Config, now time.Time) (environment.Environment, error) {
	env := cfg.Environment
	if env.Name != "dev" {
		return env, nil
	}
	genesis := cfg.DevGenesis
	if genesis.IsZero() {
		var err error
		if genesis, err = storedGenesis(filepath.Join(cfg.DataDir, "dev-genesis"), now); err != nil {
			return env, err
		}
	}
	return env.WithDevClock(genesis, cfg.SlotLength), nil
}

func storedGenesis(path string, now time.Time) (time.Time, error) {
	if b, err := os.ReadFile(path); err == nil {
		ms, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("dev genesis in %s: %w", path, err)
		}
		return time.UnixMilli(ms), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return time.Time{}, fmt.Errorf("dev genesis: %w", err)
	}
	g := now.Truncate(time.Second)
	if err := os.WriteFile(path, []byte(strconv.FormatInt(g.UnixMilli(), 10)+"\n"), 0o600); err != nil {
		return time.Time{}, fmt.Errorf("dev genesis: %w", err)
	}
	return g, nil
}

// buildMarkets registers the demo validator, then builds the dev beacon,
// the validator routes, the slot clock and the matcher.
func (s *Stack) buildMarkets(ctx context.Context) error {
	env := s.cfg.Environment
	defer leaveStage(ctx)
	enterStage(ctx, StageIngress)
	s.beacon = devkit.NewBeacon(s.pool)
	if err := s.ingress.ServeValidators(s.pool, s.beacon, func() error { return s.monitor.Err("postgres") }, s.log.With("service", "validators")); err != nil {
		return err
	}
	if s.cfg.DemoValidator {
		pk, err := devkit.RegisterValidator(ctx, s.pool, env.ChainID, devchain.DemoUserAddress, []byte(devchain.DemoValidatorSeed))
		if err != nil {
			return err
		}
		s.demoPubkey = pk
	}
	var err error
	if s.clock, err = ingress.NewClock(env, s.cfg.Ingress.Markets, s.pool, s.beacon, s.kcl, s.log.With("service", "clock")); err != nil {
		return err
	}
	enterStage(ctx, StageMatcher)
	mc := s.cfg.Matcher
	mc.Kafka.Brokers, mc.Kafka.Compression, mc.Logger = s.brokers, s.cfg.KafkaCompression, s.log.With("service", "matcher")
	mc.InstanceID = "dev" // the stack's one matcher
	s.matcher, err = matcher.New(mc)
	if err != nil {
		return err
	}
	return s.matcher.RegisterMetrics(s.registry)
}

func (s *Stack) runMatcher(ctx context.Context) error {
	defer s.matcher.Close()
	return s.matcher.Run(ctx)
}

// printMarkets adds the slot clock and the demo validator to the banner.
func (s *Stack) printMarkets(w io.Writer) {
	env := s.cfg.Environment
	fmt.Fprintf(w, "  slot clock    genesis %s, %s slots (DEV_GENESIS, SLOT_LENGTH); markets open 64 (whole block) and 32 (preconf) slots ahead\n",
		env.Genesis.UTC().Format(time.RFC3339), env.SlotLength)
	if s.demoPubkey != "" {
		fmt.Fprintf(w, "  demo seller   user %s (dev-only key %s)\n", devchain.DemoUserAddress, devchain.DemoUserKey)
		fmt.Fprintf(w, "                validator %s proposes every slot of the dev beacon until more register\n", s.demoPubkey)
	}
}
