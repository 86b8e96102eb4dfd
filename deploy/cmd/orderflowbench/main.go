// Command orderflowbench measures private orderflow on the dev stack
// (embedded Kafka and Postgres in a temporary directory, loopback):
//
//	go run ./deploy/cmd/orderflowbench [-workers 64] [-duration 5s] [-sockets 1,100,1000]
//
// It prints originator submissions per second (eth_sendRawTransaction of
// distinct signed transactions over keep-alive HTTP), next to a baseline
// of the same requests with a transaction the endpoint already accepted
// (decode, checks and dedup, no publish), and the fan-out latency from the
// originator's send to delivery on every searcher socket, p50/p99/max, at
// each socket count, with transactions paced at -rate per second. The
// originator load and the searcher sockets run in child processes (this
// binary with -load or -searchers), so the CPU time it prints for the
// stack is the stack's own.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/deploy/devstack"
	"blockspace.exchange/deploy/loadtest"
	"blockspace.exchange/platform/config"
	of "blockspace.exchange/platform/orderflow"
)

func main() {
	workers := flag.Int("workers", 64, "concurrent originator connections")
	duration := flag.Duration("duration", 5*time.Second, "length of the throughput run")
	socketList := flag.String("sockets", "1,100,1000", "searcher socket counts for the fan-out runs")
	rate := flag.Int("rate", 200, "transactions per second during fan-out runs")
	perRun := flag.Int("txs", 400, "transactions per fan-out run")
	flag.StringVar(&profilePrefix, "cpuprofile", "", "write a CPU profile of each measured phase to <prefix>.<phase>.pprof, the searcher process's to <prefix>.searchers-<n>.pprof")
	load := flag.String("load", "", "internal: run as the originator load process against this URL")
	searcherURL := flag.String("searchers", "", "internal: run as the searcher process, -sockets sockets on this URL")
	flag.Parse()
	if *searcherURL != "" {
		n, err := strconv.Atoi(*socketList)
		if err == nil {
			err = runSearchers(*searcherURL, n)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "orderflowbench searchers:", err)
			os.Exit(1)
		}
		return
	}
	if *load != "" {
		if err := runLoad(*load, *workers, *duration); err != nil {
			fmt.Fprintln(os.Stderr, "orderflowbench load:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*workers, *duration, *socketList, *rate, *perRun); err != nil {
		fmt.Fprintln(os.Stderr, "orderflowbench:", err)
		os.Exit(1)
	}
}

// profilePrefix is the -cpuprofile flag: "" profiles nothing.
var profilePrefix string

// profile starts a CPU profile of one phase when -cpuprofile is set; the
// returned function ends it.
func profile(phase string) (func(), error) {
	if profilePrefix == "" {
		return func() {}, nil
	}
	return loadtest.StartCPUProfile(profilePrefix + "." + phase + ".pprof")
}

type bench struct {
	a      devstack.OrderflowAddresses
	client *http.Client
	nonce  atomic.Uint64
}

func run(workers int, d time.Duration, socketList string, rate, perRun int) error {
	dir, err := os.MkdirTemp("", "orderflowbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755) // the private Postgres runs as the postgres OS user
	cfg, err := devstack.ConfigFromEnv(config.FromMap(map[string]string{
		"DATA_DIR": dir, "HTTP_ADDR": "127.0.0.1:0", "ADMIN_ADDR": "127.0.0.1:0", "KAFKA_ADDR": "127.0.0.1:0",
		"ORIGINATOR_ADDR": "127.0.0.1:0", "SEARCHER_ADDR": "127.0.0.1:0", "ORDERFLOW_ADDR": "127.0.0.1:0",
		"CHAIN_ADDR": "127.0.0.1:0", "DEV_BUILDER_ADDR": "127.0.0.1:0",
		"MAX_IN_FLIGHT": "100000", "DEV_BLOCK_INTERVAL": "1m",
		// Every fan-out socket uses one API key: the relay's socket
		// limits must not refuse the sockets being measured.
		"SEARCHER_SOCKETS_PER_KEY": "65536", "SEARCHER_SOCKETS_MAX": "1048576",
	}))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stack, err := devstack.Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- stack.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(500 * time.Millisecond)
	b := &bench{a: stack.Addresses().Orderflow, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2}}}
	fmt.Printf("orderflow on loopback, %d originator connections\n", workers)
	if err := b.throughput(workers, d); err != nil {
		return err
	}
	key, err := b.apiKey(2)
	if err != nil {
		return err
	}
	for _, f := range strings.Split(socketList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		if err := b.fanout(key, n, rate, perRun); err != nil {
			return err
		}
	}
	return nil
}

// signAll signs n distinct transactions ahead of the run.
func (b *bench) signAll(n int) []string {
	key, _ := crypto.HexToECDSA(devchain.DevKeys[1])
	to := common.HexToAddress("0x00000000000000000000000000000000000000e1")
	out := make([]string, n)
	var wg sync.WaitGroup
	start := b.nonce.Add(uint64(n)) - uint64(n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				tx, _ := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(1337)), &types.DynamicFeeTx{
					ChainID: big.NewInt(1337), Nonce: start + uint64(i), GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9),
					Gas: 21000, To: &to, Value: big.NewInt(1)})
				raw, _ := tx.MarshalBinary()
				out[i] = hexutil.Encode(raw)
			}
		})
	}
	wg.Wait()
	return out
}

func (b *bench) send(raw string) error { return send(b.client, b.a.Originator+"/v1", raw) }

// throughput runs distinct submissions, then the baseline of repeats.
func (b *bench) throughput(workers int, d time.Duration) error {
	estimate := int(d.Seconds()*30000) + 1000
	txs := b.signAll(estimate)
	measure := func(name, phase string, list []string) (float64, error) {
		stop, err := profile(phase)
		if err != nil {
			return 0, err
		}
		defer stop()
		r, err := loadInChild(b.a.Originator+"/v1", list, workers, d)
		if err != nil {
			return 0, err
		}
		rps := float64(r.n) / r.elapsed.Seconds()
		per := func(cpu time.Duration) time.Duration {
			return (cpu / time.Duration(max(r.n, 1))).Round(time.Microsecond)
		}
		fmt.Printf("  %-44s %9.0f /s  (%d in %s; CPU a request: stack %s, load process %s)\n",
			name, rps, r.n, r.elapsed.Round(time.Millisecond), per(r.serverCPU), per(r.clientCPU))
		return rps, nil
	}
	repeats := make([]string, len(txs))
	for i := range repeats {
		repeats[i] = txs[i%64]
	}
	subject, err := measure("submissions (decode, check, publish, ack)", "submissions", txs)
	if err != nil {
		return err
	}
	base, err := measure("baseline: repeats (decode, check, no publish)", "repeats", repeats)
	if err != nil {
		return err
	}
	fmt.Printf("  submissions / baseline: %.2f\n", subject/base)
	return nil
}

func (b *bench) apiKey(i int) (string, error) {
	key, _ := crypto.HexToECDSA(devchain.DevKeys[i])
	addr := strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex())
	resp, err := http.Get(b.a.Orderflow + "/v1/auth/challenge?address=" + addr)
	if err != nil {
		return "", err
	}
	var ch struct {
		Data struct {
			Nonce     string
			TypedData of.Challenge
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&ch)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	digest, err := ch.Data.TypedData.Digest()
	if err != nil {
		return "", err
	}
	sig, _ := crypto.Sign(digest, key)
	body, _ := json.Marshal(map[string]string{"address": addr, "nonce": ch.Data.Nonce, "signature": hexutil.Encode(sig)})
	resp, err = http.Post(b.a.Orderflow+"/v1/auth/verify", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct{ Data struct{ APIKey string } }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Data.APIKey == "" {
		return "", fmt.Errorf("verify failed: %v", err)
	}
	return v.Data.APIKey, nil
}

// fanout opens n sockets in the searcher process, sends perRun paced
// transactions and measures send→delivery on every socket.
func (b *bench) fanout(key string, n, rate, perRun int) error {
	txs := b.signAll(perRun)
	hashes := make([]string, perRun)
	for i, raw := range txs {
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(hexutil.MustDecode(raw)); err != nil {
			return err
		}
		hashes[i] = tx.Hash().Hex()
	}
	clients, err := startSearchers(b.a.SearcherWS+"/v1/"+key, n, hashes)
	if err != nil {
		return err
	}
	defer clients.kill()
	time.Sleep(300 * time.Millisecond) // the last sockets join the hub just after their upgrade
	stopProfile, err := profile(fmt.Sprintf("fanout-%d", n))
	if err != nil {
		return err
	}
	stop := sync.OnceFunc(stopProfile)
	defer stop()
	sent := make([]int64, perRun) // wall clock, comparable with the child's
	cpu0 := loadtest.ProcessCPU()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for i, raw := range txs {
		<-tick.C
		sent[i] = time.Now().UnixNano()
		if err := b.send(raw); err != nil {
			return err
		}
	}
	tick.Stop()
	clientCPU, err := clients.wait(10 * time.Second)
	if err != nil {
		return err
	}
	cpu := loadtest.ProcessCPU() - cpu0
	stop()
	got, err := clients.arrivals()
	if err != nil {
		return err
	}
	if len(got) == 0 {
		return fmt.Errorf("no deliveries on %d sockets", n)
	}
	lat := make([]time.Duration, len(got))
	for i, a := range got {
		lat[i] = time.Duration(a.at - sent[a.idx])
	}
	d := loadtest.Distribution(lat)
	per := func(cpu time.Duration) time.Duration {
		return (cpu / time.Duration(len(got))).Round(100 * time.Nanosecond)
	}
	r := func(x time.Duration) time.Duration { return x.Round(10 * time.Microsecond) }
	fmt.Printf("  fan-out %4d sockets: p50 %7s  p99 %7s  max %7s  (%d deliveries of %d, %d tx/s; CPU a delivery: stack %s, searcher process %s)\n",
		n, r(d.P50), r(d.P99), r(d.Max), len(got), n*perRun, rate, per(cpu), per(clientCPU))
	return nil
}
