package ingress

import "blockspace.exchange/ingress/internal/chainwatch"

// DepositWatcherConfig configures the deposit watcher (DepositWatcher).
type DepositWatcherConfig = chainwatch.Config
