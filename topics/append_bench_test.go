package topics

import "testing"

// BenchmarkAppendJSON encodes the payloads written at the highest rates
// (the matcher's order events and fills, ingress's place commands and
// transactions) into a reused buffer, as their producers do.
func BenchmarkAppendJSON(b *testing.B) {
	code := 191
	to := "0x00000000000000000000000000000000000000aa"
	ev := OrderEvent{CommandID: "cmd-1", OrderID: 42, ClientOrderID: "c-42", UserID: 7, AccountID: 71, MarketID: 3,
		InstrumentID: "ETH-PC-1000", Slot: 1000, Side: true, OrderType: OrderTypeLimit, Price: "0.000000002",
		Quantity: "21000", Fulfilled: "0", Status: OrderStatusPending, ErrorCode: &code, TradeID: 9, LastPrice: "0.000000002"}
	place := OrderPlace{OrderID: 42, UserID: 7, AccountID: 71, InstrumentID: "ETH-PC-1000", Side: true,
		OrderType: OrderTypeLimit, Quantity: "21000", Price: "0.000000002", ClientOrderID: "c-42"}
	fill := Fill{TradeID: 9, CommandID: "cmd-1", MarketID: 3, InstrumentID: "ETH-PC-1000", Slot: 1000, Price: "0.000000002",
		Quantity: "21000", Side: true, TakerOrderID: 42, TakerUserID: 7, TakerAccountID: 71, MakerOrderID: 41, MakerUserID: 8,
		MakerAccountID: 81, AvailablePreconf: 100, BuyerFee: "0.0000000001", SellerFee: "0.0000000001"}
	tx := OrderflowTx{Hash: "0x01", Raw: "0x02f8", Originator: "0xab", Refund: RefundPolicy{Recipient: "0xcd", Percent: 90},
		Method: "eth_sendRawTransaction", ReceivedAt: 1_700_000_000_123,
		Tx: DecodedTx{ChainID: "0x1", Type: "0x2", Hash: "0x01", From: "0xf1", To: &to, Nonce: "0x0", Value: "0x1", Gas: "0x5208",
			MaxFeePerGas: "0x2", MaxPriorityFeePerGas: "0x1", Data: "0x",
			AccessList: []AccessTuple{{Address: "0xaa", StorageKeys: []string{"0x01", "0x02"}}}}}
	for _, c := range []struct {
		name string
		p    interface{ AppendJSON([]byte) []byte }
	}{{"OrderEvent", &ev}, {"OrderPlace", &place}, {"Fill", &fill}, {"OrderflowTx", &tx}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 1024)
			for range b.N {
				buf = c.p.AppendJSON(buf[:0])
			}
		})
	}
}
