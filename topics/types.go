package topics

// Message type names, the "type" of an envelope and its "type" header. A name
// is "<noun>.<verb or kind>" in lower case. Each type is carried by exactly one
// topic (see MessageTypes); the payload of each is defined by the service that
// produces it, except ClockTick and SlotLayout, which this package defines.
const (
	// Commands and ticks on Orders.
	TypeOrderPlace       = "order.place"
	TypeOrderCancel      = "order.cancel"
	TypeOrderCancelBatch = "order.cancel_batch"
	TypeOrderCancelAll   = "order.cancel_all"
	TypeSlotProposer     = "slot.proposer"
	TypeClockTick        = "clock.tick"
	TypeMarketOpen       = "market.open"

	// Matcher decisions on OrderEvents.
	TypeOrderAccepted  = "order.accepted"
	TypeOrderRejected  = "order.rejected"
	TypeOrderCancelled = "order.cancelled"
	TypeOrderExpired   = "order.expired"
	TypeOrderFilled    = "order.filled"
	TypeCancelRejected = "order.cancel_rejected"
	TypeBookChanged    = "book.changed"
	TypeMarketStatus   = "market.status"

	// Trades on Fills.
	TypeTradeExecuted = "trade.executed"

	// Market state on MatcherSnapshots.
	TypeMatcherSnapshot = "matcher.snapshot"

	// Commands on LedgerCommands.
	TypeLedgerTransfer = "ledger.transfer"
	TypeLedgerWithdraw = "ledger.withdraw"

	// Chain-facing money movements on FundingEvents.
	TypeDepositObserved     = "funding.deposit_observed"
	TypeWithdrawalSubmitted = "funding.withdrawal_submitted"
	TypeWithdrawalConfirmed = "funding.withdrawal_confirmed"
	TypeWithdrawalFailed    = "funding.withdrawal_failed"

	// Ledger and position results on AccountEvents.
	TypeBalanceChanged    = "account.balance_changed"
	TypeTransactionPosted = "account.transaction_posted"
	TypePositionChanged   = "account.position_changed"

	// Validator facts on Validators.
	TypeValidatorRegistered   = "validator.registered"
	TypeValidatorDeregistered = "validator.deregistered"
	TypeProposerDuty          = "validator.proposer_duty"

	// Private orderflow.
	TypeOrderflowTx               = "orderflow.tx"
	TypeOrderflowOriginatorBundle = "orderflow.originator_bundle"
	TypeOrderflowSearcherBundle   = "orderflow.searcher_bundle"
	TypeOrderflowTxStatus         = "orderflow.tx_status"
	TypeOrderflowBundleStatus     = "orderflow.bundle_status"
	TypeOrderflowRefund           = "orderflow.refund"

	// The layout record on SlotLayouts.
	TypeSlotLayout = "layout.slot"
)

// MessageType describes one message type of the catalog.
type MessageType struct {
	// Name is the envelope type, e.g. "order.place".
	Name string
	// Topic is the one topic that carries the type.
	Topic string
	// Producer names the service that writes it.
	Producer string
	// Summary is a one-line meaning for readers of the log.
	Summary string
}

// MessageTypes returns every message type of the catalog in catalog order.
// It builds a new slice on each call so callers may keep or change it.
func MessageTypes() []MessageType {
	return []MessageType{
		{TypeOrderPlace, Orders, "ingress", "place an order in a slot's market; a buy's funds are already reserved, a sell's position is checked and locked by the matcher"},
		{TypeOrderCancel, Orders, "ingress", "cancel one order by orderId or clientOrderId"},
		{TypeOrderCancelBatch, Orders, "ingress", "cancel several orders of one market by orderIds and/or clientOrderIds"},
		{TypeOrderCancelAll, Orders, "ingress", "cancel every live order of an account in one slot; ingress publishes one per live slot of the family"},
		{TypeSlotProposer, Orders, "none", "reserved: no service writes it (a slot's seller comes with market.open), and the matcher ignores it"},
		{TypeClockTick, Orders, "ingress", "a point of a slot's market time: market open, trading closed, submission closed or finalized"},
		{TypeMarketOpen, Orders, "ingress", "open one market of a slot with its parameters, seller and preconf supply"},
		{TypeOrderAccepted, OrderEvents, "matcher", "an order passed the matcher's checks and rests on or traded against the book"},
		{TypeOrderRejected, OrderEvents, "matcher", "an order failed a check; its reservation is to be released"},
		{TypeOrderCancelled, OrderEvents, "matcher", "an order left the book by a cancel command (user) or by the system"},
		{TypeOrderExpired, OrderEvents, "matcher", "an open order expired when its market's trading closed"},
		{TypeOrderFilled, OrderEvents, "matcher", "an order traded part (status 13) or all (status 10) of its quantity in one fill"},
		{TypeCancelRejected, OrderEvents, "matcher", "a cancel command named an order that is unknown (108) or already done (109)"},
		{TypeBookChanged, OrderEvents, "none", "reserved: the matcher does not write it; books are rebuilt from the order events"},
		{TypeMarketStatus, OrderEvents, "matcher", "a market opened, its status changed after a clock tick, or its availablePreconf changed without a fill"},
		{TypeTradeExecuted, Fills, "matcher", "a taker order matched a maker order at a price and quantity, with both fees"},
		{TypeMatcherSnapshot, MatcherSnapshots, "matcher", "one part of the full state of one slot's markets, gzip-compressed, and the orders offset it reflects"},
		{TypeLedgerTransfer, LedgerCommands, "ingress", "move tokens between two accounts of one user; the amount is already reserved"},
		{TypeLedgerWithdraw, LedgerCommands, "ingress", "debit an accepted withdrawal request; the amount and fee are already reserved"},
		{TypeDepositObserved, FundingEvents, "ingress", "the chain watcher saw a collateral deposit reach the required confirmations"},
		{TypeWithdrawalSubmitted, FundingEvents, "settler", "the withdrawal executor sent the withdrawal transaction (txHash set)"},
		{TypeWithdrawalConfirmed, FundingEvents, "settler", "the withdrawal transaction was confirmed on chain"},
		{TypeWithdrawalFailed, FundingEvents, "settler", "the withdrawal failed on chain or was rejected; the funds are returned"},
		{TypeBalanceChanged, AccountEvents, "settler", "a token balance of an account changed (quantity, locked, available after the change)"},
		{TypeTransactionPosted, AccountEvents, "settler", "an account transaction (ledger entry) was posted"},
		{TypePositionChanged, AccountEvents, "settler", "a position of an account in a market changed (quantity, locked, available, expired after the change)"},
		{TypeValidatorRegistered, Validators, "ingress", "a user registered a validator as theirs, so its slots can be sold"},
		{TypeValidatorDeregistered, Validators, "ingress", "a user removed a validator's registration; slots it proposes open no new markets"},
		{TypeProposerDuty, Validators, "ingress", "the beacon chain assigned a slot to a registered validator"},
		{TypeOrderflowTx, OrderflowTxs, "ingress", "an originator submitted a signed transaction; carries the raw and the decoded form"},
		{TypeOrderflowOriginatorBundle, OrderflowBundles, "ingress", "an originator submitted a bundle"},
		{TypeOrderflowSearcherBundle, OrderflowBundles, "ingress, orderflow-relay", "a searcher submitted a bundle, possibly backrunning an originator transaction"},
		{TypeOrderflowTxStatus, OrderflowLifecycle, "orderflow-relay", "a transaction's status changed (INCLUDED, FAILED, or PENDING again after a reorganisation)"},
		{TypeOrderflowBundleStatus, OrderflowLifecycle, "orderflow-relay", "a bundle's status changed (FORWARDED, REPLACED, INCLUDED, FAILED, CANCELLED, or FORWARDED/RECEIVED again after a reorganisation)"},
		{TypeOrderflowRefund, OrderflowRefunds, "orderflow-relay", "a refund owed to an originator for a backrun that was included"},
		{TypeSlotLayout, SlotLayouts, "topicctl", "the slot→partition epochs of one slot-partitioned topic family"},
	}
}

// LookupType returns the catalog entry of a message type name.
func LookupType(name string) (MessageType, bool) {
	for _, m := range MessageTypes() {
		if m.Name == name {
			return m, true
		}
	}
	return MessageType{}, false
}
