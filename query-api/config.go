package queryapi

import (
	"time"

	"blockspace.exchange/platform/config"
	"blockspace.exchange/platform/httpx"
)

// DefaultReferenceRefresh is how often reference data is reloaded when
// REFERENCE_REFRESH is not set.
const DefaultReferenceRefresh = 5 * time.Second

// ConfigFromEnv reads query-api's variables (docs/deploy.md):
// HTTP_ADDR (:8080), ORDERFLOW_ADDR (:8083), COLLATERAL_CONTRACT (unset:
// the stored one), REFERENCE_REFRESH (5s, 100ms to 1h) and MAX_IN_FLIGHT
// (1024). The environment and Kafka's brokers are the process's own
// (process.Common); the caller sets them. Errors are reported on r.
func ConfigFromEnv(r *config.Reader) Config {
	return Config{
		Addr:               r.String("HTTP_ADDR", ":8080"),
		OrderflowAddr:      r.String("ORDERFLOW_ADDR", ":8083"),
		CollateralContract: r.String("COLLATERAL_CONTRACT", ""),
		ReferenceRefresh:   r.Duration("REFERENCE_REFRESH", DefaultReferenceRefresh, 100*time.Millisecond, time.Hour),
		MaxInFlight:        httpx.MaxInFlightFromEnv(r),
	}
}
