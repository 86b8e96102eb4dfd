package topics

// Application codes of order entry and of the order events
// (docs/codes.md "Application codes"). Each code is declared here once:
// ingress answers them, the matcher writes them into order events, and
// query-api and the REST frame (platform/httpx) answer the ones they share,
// 114 and 1001. The codes only the frame answers (1, 20, 21, 1002, 9999)
// are in platform/httpx, the funding codes (10010–10014) in ingress's
// funding package.
const (
	// CodeCancelled answers a cancel sent to the matcher.
	CodeCancelled = 1
	// CodeValidation is malformed or out-of-range input: an order field,
	// a REST parameter or body, a WebSocket message.
	CodeValidation       = 1001
	CodeInvalidAccount   = 102
	CodeQuantityBelowMin = 107
	CodeNoSuchOrder      = 108
	CodeOrderDone        = 109
	// CodeMarketNotOpen is also the answer for a market that does not
	// exist or is not visible (REST and WebSocket).
	CodeMarketNotOpen   = 114
	CodePriceInvalid    = 115
	CodeQuantityInvalid = 120
	CodeClientOrderID   = 122
	// CodeInsufficientFunds refuses a buy whose reservation, or a transfer
	// whose amount, exceeds the account's available ETH.
	CodeInsufficientFunds    = 123
	CodePassiveWouldTake     = 124
	CodeInsufficientPosition = 125
	CodeAutoCancelled        = 191
	CodeManuallyCancelled    = 192
)
