package relay_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/gorilla/websocket"
	"github.com/twmb/franz-go/pkg/kgo"

	relay "blockspace.exchange/orderflow-relay"
	"blockspace.exchange/platform/kafka/kafkatest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestStreamStartsWhereNewFoundTheLog: a submission acknowledged after
// New returned reaches the sockets, even when it is in the log before the
// relay's feed ever asked the broker for anything. (A feed that started at
// "the end" when it first fetched skipped it.)
func TestStreamStartsWhereNewFoundTheLog(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.New(t, schema.Migrations())
	producer, brokers := kafkatest.Start(t)
	// Something submitted before the relay started is not streamed.
	publish(t, producer, 0)

	chainID := big.NewInt(1337)
	svc, err := relay.New(ctx, relay.Config{ChainID: chainID}, relay.Deps{Pool: pool, Brokers: brokers,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	// Submitted the moment New returned, before Run: streamed.
	want := publish(t, producer, 1)
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	key, _, err := of.NewKeyStore(pool).Issue(ctx, "0x00000000000000000000000000000000000000c1")
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The server joins the socket to the stream just after its handshake
	// answer, which the dial may read first: wait for it, or a feed
	// quicker than that would broadcast before the socket listens.
	poll.Before(t, "the socket to join the stream", time.Now().Add(poll.Timeout), func() bool { return svc.Sockets() == 1 },
		func() string { return fmt.Sprintf("%d sockets open, want 1", svc.Sockets()) })

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = svc.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()

	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, msg, err := conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(msg, []byte(want)) {
		t.Fatalf("first notification %.200s, want the transaction %s", msg, want)
	}
}

// publish produces an originator transaction record as ingress does and
// returns its hash.
func publish(t *testing.T, p *kgo.Client, nonce uint64) string {
	t.Helper()
	key, _ := crypto.HexToECDSA("b71c71a67e1177ad4e901695e1b4b9ee17ae16c6668d313eac2f96dbcda3f291")
	to := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	chainID := big.NewInt(1337)
	signed, err := types.SignNewTx(key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := signed.MarshalBinary()
	tx, err := of.DecodeRawTx(hexutil.Encode(raw), of.Rules{ChainID: chainID})
	if err != nil {
		t.Fatal(err)
	}
	m := topics.OrderflowTx{Hash: tx.Hash.Hex(), Raw: tx.Raw, Tx: tx.Decoded, Refund: topics.RefundPolicy{Percent: 90},
		Method: "eth_sendRawTransaction", ReceivedAt: time.Now().UnixMilli()}
	if err := of.PublishTx(t.Context(), p, &m, time.Now()); err != nil {
		t.Fatal(err)
	}
	return m.Hash
}
