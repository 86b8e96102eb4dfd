package relay_test

import (
	"bytes"
	"context"
	"errors"
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
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	relay "blockspace.exchange/orderflow-relay"
	"blockspace.exchange/platform/kafka/kafkatest"
	"blockspace.exchange/platform/metricstest"
	of "blockspace.exchange/platform/orderflow"
	"blockspace.exchange/platform/poll"
	"blockspace.exchange/platform/postgres/pgtest"
	"blockspace.exchange/settler/schema"
	"blockspace.exchange/topics"
)

func TestMain(m *testing.M) { pgtest.Main(m, kafkatest.StopShared) }

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
	reg := prometheus.NewRegistry()
	if err := svc.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	// The feed starts at the ends New listed: the one submission since is
	// its whole lag.
	if got := lagSum(t, reg, "orderflow-relay-feed"); got != 1 {
		t.Fatalf("feed lag before Run = %v, want 1", got)
	}
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
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("service Run: %v", err)
		}
	}()

	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, msg, err := conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(msg, []byte(want)) {
		t.Fatalf("first notification %.200s, want the transaction %s", msg, want)
	}
	// The feed streamed its one record; the forwarder, reading from the
	// start, stored both.
	var got map[string]float64
	poll.Before(t, "both consumers to catch up", time.Now().Add(poll.Timeout), func() bool {
		got = metricstest.Gather(t, reg)
		held := metricstest.Prefixed(got, `kafka_consumer_lag_records{group="orderflow-relay-builders"`)
		return len(held) > 0 && lagSum(t, reg, "orderflow-relay-feed") == 0 && lagSum(t, reg, "orderflow-relay-builders") == 0 &&
			got[`kafka_consumer_records_total{group="orderflow-relay-feed",topic="orderflow-txs"}`] == 1 &&
			got[`kafka_consumer_records_total{group="orderflow-relay-builders",topic="orderflow-txs"}`] == 2
	}, func() string { return metricstest.Dump(metricstest.Prefixed(got, "kafka_consumer")) })
}

// lagSum is the lag of group's partitions, summed.
func lagSum(t *testing.T, reg *prometheus.Registry, group string) float64 {
	t.Helper()
	var sum float64
	for _, v := range metricstest.Prefixed(metricstest.Gather(t, reg), `kafka_consumer_lag_records{group="`+group+`"`) {
		sum += v
	}
	return sum
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
