package ingress

import "blockspace.exchange/ingress/internal/deposits"

// DepositWatcherConfig configures the deposit watcher (DepositWatcher).
type DepositWatcherConfig = deposits.Config
