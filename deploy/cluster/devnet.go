package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/ingress"
	"blockspace.exchange/ingress/devkit"
	"blockspace.exchange/platform/serve"
)

// devnet is the outside world of the cluster, what a deployment reaches
// over the network and the runner stands in for: the dev chain's JSON-RPC
// (deposits, withdrawals, inclusion, refunds), its block builder, and a
// beacon node answering the standard beacon API from the dev beacon. The
// services reach each by URL, as they reach the real ones.
type devnet struct {
	chain   *devchain.Chain
	builder *devchain.Builder

	ChainURL, BuilderURL, BeaconURL string

	servers []*http.Server
	stop    context.CancelFunc
	done    chan struct{}
}

// startDevnet starts the dev chain with its JSON-RPC on a free loopback
// port, deploys the collateral contract, serves the builder and the
// beacon, and mines a block every blockInterval.
func startDevnet(ctx context.Context, pool *pgxpool.Pool, blockInterval time.Duration, log *slog.Logger) (*devnet, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	chain, err := devchain.New(devchain.WithRPC("127.0.0.1", port))
	if err != nil {
		return nil, fmt.Errorf("start dev chain: %w", err)
	}
	d := &devnet{chain: chain, ChainURL: fmt.Sprintf("http://127.0.0.1:%d", port), done: make(chan struct{})}
	if addr, err := chain.DeployCollateral(ctx); err != nil {
		chain.Close()
		return nil, err
	} else if addr != devchain.CollateralAddress() {
		chain.Close()
		return nil, fmt.Errorf("dev collateral contract deployed at %s, expected %s", addr.Hex(), devchain.CollateralAddress().Hex())
	}
	d.builder = devchain.NewBuilder(chain, log.With("service", "dev-builder"))
	if d.BuilderURL, err = d.serve(d.builder); err != nil {
		d.close()
		return nil, err
	}
	if d.BeaconURL, err = d.serve(beaconAPI{b: devkit.NewBeacon(pool)}); err != nil {
		d.close()
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	d.stop = stop
	go func() {
		defer close(d.done)
		_ = chain.Run(runCtx, blockInterval, d.builder.Prepare)
	}()
	return d, nil
}

// serve serves h on a free loopback port and returns its base URL.
func (d *devnet) serve(h http.Handler) (string, error) {
	ln, err := serve.Listen("127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	d.servers = append(d.servers, srv)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

func (d *devnet) close() {
	if d.stop != nil {
		d.stop()
		<-d.done
	}
	for _, s := range d.servers {
		_ = s.Close()
	}
	_ = d.chain.Close()
}

// beaconAPI answers the two reads of the standard beacon API the exchange
// makes (docs/markets.md "Proposers and sellers") from a Beacon: proposer
// duties of an epoch and a validator at the head state.
type beaconAPI struct{ b ingress.Beacon }

func (a beaconAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const duties, validators = "/eth/v1/validator/duties/proposer/", "/eth/v1/beacon/states/head/validators/"
	switch {
	case r.Method != http.MethodGet:
		http.Error(w, `{"code":405,"message":"GET only"}`, http.StatusMethodNotAllowed)
	case strings.HasPrefix(r.URL.Path, duties):
		a.duties(w, r, strings.TrimPrefix(r.URL.Path, duties))
	case strings.HasPrefix(r.URL.Path, validators):
		a.validator(w, r, strings.TrimPrefix(r.URL.Path, validators))
	default:
		http.Error(w, `{"code":404,"message":"not found"}`, http.StatusNotFound)
	}
}

func (a beaconAPI) duties(w http.ResponseWriter, r *http.Request, epochText string) {
	epoch, err := strconv.ParseUint(epochText, 10, 64)
	if err != nil {
		http.Error(w, `{"code":400,"message":"epoch is not an unsigned integer"}`, http.StatusBadRequest)
		return
	}
	list, err := a.b.ProposerDuties(r.Context(), epoch)
	if err != nil {
		http.Error(w, `{"code":503,"message":"duties unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	type duty struct {
		Pubkey         string `json:"pubkey"`
		ValidatorIndex string `json:"validator_index"`
		Slot           string `json:"slot"`
	}
	out := make([]duty, 0, len(list))
	for _, d := range list {
		out = append(out, duty{Pubkey: d.Pubkey, ValidatorIndex: strconv.FormatUint(d.ValidatorIndex, 10), Slot: strconv.FormatUint(d.Slot, 10)})
	}
	writeJSON(w, map[string]any{"data": out})
}

func (a beaconAPI) validator(w http.ResponseWriter, r *http.Request, pubkey string) {
	v, ok, err := a.b.Validator(r.Context(), pubkey)
	switch {
	case err != nil:
		http.Error(w, `{"code":503,"message":"validator unavailable"}`, http.StatusServiceUnavailable)
	case !ok:
		http.Error(w, `{"code":404,"message":"validator not found"}`, http.StatusNotFound)
	default:
		writeJSON(w, map[string]any{"data": map[string]string{"index": strconv.FormatUint(v.Index, 10), "status": v.Status}})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freeAddrs are n distinct free loopback addresses, host:port: each port
// is held until all are chosen, so the kernel hands none out twice.
func freeAddrs(n int) ([]string, error) {
	out := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		defer l.Close()
		out = append(out, l.Addr().String())
	}
	return out, nil
}
