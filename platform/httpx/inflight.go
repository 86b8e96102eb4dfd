package httpx

import "blockspace.exchange/platform/config"

// DefaultMaxInFlight is how many requests a service serves at once before
// it answers 429, when MAX_IN_FLIGHT is not set.
const DefaultMaxInFlight = 1024

// MaxInFlightFromEnv reads MAX_IN_FLIGHT (1024, 1 to 1048576), the
// concurrent requests of a service before 429.
func MaxInFlightFromEnv(r *config.Reader) int {
	return r.Int("MAX_IN_FLIGHT", DefaultMaxInFlight, 1, 1<<20)
}
