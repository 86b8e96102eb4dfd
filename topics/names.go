package topics

// Topic names. A name never changes once records have been written to it;
// a replacement topic gets a new name.
const (
	// Orders carries order commands and slot-clock ticks, partitioned by slot.
	Orders = "orders"
	// OrderEvents carries what the matcher decided about orders and books.
	OrderEvents = "order-events"
	// Fills carries trades, one record per match.
	Fills = "fills"
	// MatcherSnapshots holds the latest state of each slot's market.
	MatcherSnapshots = "matcher-snapshots"
	// LedgerCommands carries transfers and withdrawal debits for the settler.
	LedgerCommands = "ledger-commands"
	// FundingEvents carries chain deposits and the withdrawal lifecycle.
	FundingEvents = "funding-events"
	// AccountEvents carries balance changes for live account feeds.
	AccountEvents = "account-events"
	// Validators carries validator registrations and proposer duties.
	Validators = "validators"
	// OrderflowTxs carries decoded private originator transactions.
	OrderflowTxs = "orderflow-txs"
	// OrderflowBundles carries originator and searcher bundles.
	OrderflowBundles = "orderflow-bundles"
	// OrderflowLifecycle carries status changes of transactions and bundles.
	OrderflowLifecycle = "orderflow-lifecycle"
	// OrderflowRefunds carries refunds owed to originators.
	OrderflowRefunds = "orderflow-refunds"
	// SlotLayouts holds the slot→partition layout of each slot-partitioned topic.
	SlotLayouts = "slot-layouts"
)
