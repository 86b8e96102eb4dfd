package devstack

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"blockspace.exchange/deploy/devchain"
	"blockspace.exchange/ingress"
	relay "blockspace.exchange/orderflow-relay"
	"blockspace.exchange/platform/serve"
	queryapi "blockspace.exchange/query-api"
)

// orderflowParts are the private-orderflow pieces of the stack: the dev
// chain and its builder, the ingress edges, the relay and the tracking
// reads, with their listeners.
type orderflowParts struct {
	chain   *devchain.Chain
	builder *devchain.Builder
	ingress *ingress.Orderflow
	relay   *relay.Service
	reads   *queryapi.Orderflow

	originatorLn, searcherLn, orderflowLn, builderLn net.Listener
}

func (s *Stack) startOrderflow(ctx context.Context) error {
	p := &s.of
	var err error
	opts, err := s.chainOptions()
	if err != nil {
		return err
	}
	if p.chain, err = devchain.New(opts...); err != nil {
		return fmt.Errorf("start dev chain: %w", err)
	}
	p.builder = devchain.NewBuilder(p.chain, s.log.With("service", "dev-builder"))
	for _, l := range []struct {
		ln   *net.Listener
		addr string
	}{{&p.originatorLn, s.cfg.OriginatorAddr}, {&p.searcherLn, s.cfg.SearcherAddr}, {&p.orderflowLn, s.cfg.OrderflowAddr}, {&p.builderLn, s.cfg.DevBuilderAddr}} {
		if *l.ln, err = serve.Listen(l.addr); err != nil {
			return err
		}
	}
	defer leaveStage(ctx)
	enterStage(ctx, StageIngress)
	p.ingress, err = ingress.NewOrderflow(s.cfg.Ingress, ingress.OrderflowDeps{Pool: s.pool, Brokers: s.brokers, KafkaCompression: s.cfg.KafkaCompression, Logger: s.log.With("service", "ingress"), Registry: s.registry})
	if err != nil {
		return err
	}
	enterStage(ctx, StageRelay)
	rc := s.cfg.Relay
	rc.ChainID, rc.BuilderURLs, rc.PayerKey = p.chain.ChainID(), []string{"http://" + p.builderLn.Addr().String()}, p.chain.Key(0)
	p.relay, err = relay.New(ctx, rc, relay.Deps{Pool: s.pool, Brokers: s.brokers, KafkaCompression: s.cfg.KafkaCompression, Chain: p.chain.Client(), Logger: s.log.With("service", "orderflow-relay"),
		Registry: s.registry, OutboxMetrics: s.outboxMetrics})
	if err != nil {
		return err
	}
	if err := p.relay.RegisterMetrics(s.registry); err != nil {
		return err
	}
	// The dev chain starts empty: what the relay followed on the previous
	// one (its cursor, refunds not confirmed there) is gone with it.
	if err := relay.ForgetChain(ctx, s.pool, p.chain.ChainID()); err != nil {
		return fmt.Errorf("reset dev chain cursor of the orderflow relay: %w", err)
	}
	enterStage(ctx, StageQuery)
	p.reads = queryapi.NewOrderflow(s.pool, 0, s.log.With("service", "query-api"))
	return nil
}

// searcherMux is the searcher port: WebSocket upgrades (GET) go to the
// relay, JSON-RPC POSTs to ingress, as the production gateway routes them.
type searcherMux struct{ ws, rpc http.Handler }

func (m searcherMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		m.ws.ServeHTTP(w, r)
		return
	}
	m.rpc.ServeHTTP(w, r)
}

// orderflowMux is the orderflow port: /v1/auth/ to ingress, the rest to
// the tracking reads.
type orderflowMux struct{ auth, reads http.Handler }

func (m orderflowMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.Path) >= 9 && r.URL.Path[:9] == "/v1/auth/" {
		m.auth.ServeHTTP(w, r)
		return
	}
	m.reads.ServeHTTP(w, r)
}

func (s *Stack) orderflowServers() []serve.Listening {
	p := &s.of
	return []serve.Listening{
		{Listener: p.originatorLn, Handler: newStagedHandler(StageIngress, p.ingress.OriginatorHandler())},
		{Listener: p.searcherLn, Handler: searcherMux{ws: newStagedHandler(StageRelay, p.relay.Handler()), rpc: newStagedHandler(StageIngress, p.ingress.SearcherHandler())}},
		{Listener: p.orderflowLn, Handler: orderflowMux{auth: newStagedHandler(StageIngress, p.ingress.AccountsHandler()), reads: newStagedHandler(StageQuery, p.reads)}},
		{Listener: p.builderLn, Handler: p.builder},
	}
}

func (s *Stack) orderflowLoops() []func(context.Context) error {
	p := &s.of
	return []func(context.Context) error{
		staged(StageRelay, p.relay.Run),
		staged(StageIngress, p.ingress.Run),
		func(ctx context.Context) error { return p.chain.Run(ctx, s.cfg.DevBlockInterval, p.builder.Prepare) },
	}
}

// stopOrderflow closes what startOrderflow opened; the listeners are
// closed by the servers that own them, or here when Run never started.
func (s *Stack) stopOrderflow() {
	p := &s.of
	if p.ingress != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p.ingress.Close(ctx)
		cancel()
	}
	if p.relay != nil {
		p.relay.Close()
	}
	if p.chain != nil {
		_ = p.chain.Close()
	}
}

// OrderflowAddresses are the private-orderflow addresses of the stack.
type OrderflowAddresses struct {
	Originator, Searcher, SearcherWS, Orderflow, DevBuilder string
}

func (s *Stack) orderflowAddresses() OrderflowAddresses {
	p := &s.of
	return OrderflowAddresses{
		Originator: "http://" + p.originatorLn.Addr().String(),
		Searcher:   "http://" + p.searcherLn.Addr().String(),
		SearcherWS: "ws://" + p.searcherLn.Addr().String(),
		Orderflow:  "http://" + p.orderflowLn.Addr().String(),
		DevBuilder: "http://" + p.builderLn.Addr().String(),
	}
}
