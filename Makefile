# The two commands of README.md: `make run` starts the whole system on its
# embedded defaults, `make test` runs every test (installing what the tests
# need first). `make lint` and `make bench` are for development.

MODULES := topics platform settler ingress matcher orderflow-relay query-api deploy
GO      ?= go
# -race doubles run time; deploy/devstack, the longest package with the
# production shape's drills, stays well within the timeout. -vet=off: the
# full go vet of every module ran just before, in test-gowork-off.
# -parallel 32: the dev stack's tests are parallel, and most of them only
# wait for their turn on the test binary's shared broker (kafkatest), so a
# slot each must not keep the drills with brokers of their own from
# running beside them.
TESTFLAGS ?= -race -count=1 -timeout 30m -vet=off -parallel 32
# The packages that take longest come first: go test starts packages in
# the order given, -p at a time, so a long one listed late runs alone at
# the end (make test-times shows where the time goes).
SLOW_PACKAGES := ./deploy/devstack ./ingress ./settler ./platform/orderflow ./matcher/internal/kafkaloop \
	./orderflow-relay/internal/builders ./platform/kafka ./platform/outbox ./deploy
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: run run-kafka run-cluster build-exchange test deps test-go test-times test-gowork-off test-e2e lint bench fuzz fuzz-api tidy

# run installs the PostgreSQL server binaries the private cluster needs
# when they are missing, then builds and starts the stack. The stack is
# make's own child (exec, never a shell waiting on it): make hands the
# SIGTERM it gets to its children, so `kill <pid of make>` stops the
# stack in order, as Ctrl-C does.
run:
	@bash scripts/ensure-postgres.sh
	@$(MAKE) --no-print-directory build-exchange
	exec ./bin/exchange

# The same dev stack on a local Apache Kafka broker (the pinned version,
# one KRaft node from the jars scripts/ensure-kafka.sh resolves, after
# installing Java and Maven when missing) instead of the in-process kfake.
run-kafka:
	@bash scripts/ensure-postgres.sh
	@bash scripts/ensure-kafka.sh >/dev/null
	@$(MAKE) --no-print-directory build-exchange
	exec env EMBEDDED_KAFKA=apache ./bin/exchange

# The production shape on this machine (docs/deploy.md "The production
# shape on one machine"): three Apache Kafka brokers, PostgreSQL, every
# service as its own process with the environment of docker-compose.yml,
# two matchers, two query-api instances and the nginx gateway. Each run
# starts from an empty exchange in .data/cluster.
run-cluster:
	@bash scripts/ensure-postgres.sh
	@bash scripts/ensure-kafka.sh >/dev/null
	@bash scripts/ensure-nginx.sh
	@$(GO) build -o bin/cluster ./deploy/cmd/cluster
	exec ./bin/cluster

build-exchange:
	@test -x bin/exchange || echo "building bin/exchange (the first build on a fresh machine downloads and compiles every module: a few minutes)"
	@$(GO) build -o bin/exchange ./deploy/cmd/exchange

test: deps test-gowork-off test-go test-e2e

deps:
	@bash scripts/ensure-postgres.sh
	@bash scripts/ensure-kafka.sh >/dev/null
	@bash scripts/ensure-kcat.sh
	@bash scripts/ensure-compose.sh
	@bash scripts/ensure-nginx.sh
	@bash scripts/ensure-kubectl.sh
	@bash scripts/ensure-promtool.sh
	@bash scripts/ensure-e2e.sh
	@bash scripts/ensure-chromium.sh
	@bash scripts/ensure-schemathesis.sh >/dev/null

# Modules that hold no Go package yet are passed over.
CODE_MODULES = $(foreach m,$(MODULES),$(if $(shell find $(m) -name '*.go' -print -quit),$(m)))

TEST_PACKAGES = $(SLOW_PACKAGES) $(foreach m,$(CODE_MODULES),./$(m)/...)

test-go:
	$(GO) test $(TESTFLAGS) $(TEST_PACKAGES)

# test-times runs the Go tests as test-go does and prints every package's
# wall time and the slowest tests (deploy/cmd/testtimes); the events stay
# in .cache/test-times.json.
test-times: deps
	@mkdir -p .cache
	$(GO) test -json $(TESTFLAGS) $(TEST_PACKAGES) > .cache/test-times.json; status=$$?; \
		$(GO) run ./deploy/cmd/testtimes .cache/test-times.json; exit $$status

# End-to-end tests with outside clients (Node's test runner in deploy/e2e);
# they start the dev stack, and one of them the production shape,
# themselves, after the Go tests. The commands they start are built here
# once for the whole run, into bin/e2e (E2E_BIN_DIR; without it each test
# file builds what it starts). Two files run at a time, each stack on free
# ports of its own (on two cores Node 20 would run one at a time; all four
# at once overload two cores shared with other work).
E2E_CONCURRENCY ?= 2
test-e2e:
	$(GO) build -o bin/e2e/ ./deploy/cmd/exchange ./deploy/cmd/cluster
	cd deploy/e2e && E2E_BIN_DIR=$(CURDIR)/bin/e2e node --test --test-concurrency=$(E2E_CONCURRENCY)

# Every module must build and vet on its own, outside the workspace.
test-gowork-off:
	@set -e; for m in $(CODE_MODULES); do \
		echo "GOWORK=off build+vet $$m"; \
		(cd $$m && GOWORK=off $(GO) build ./... && GOWORK=off $(GO) vet ./...); \
	done

lint:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@set -e; for m in $(CODE_MODULES); do (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...); done

bench:
	@bash scripts/ensure-kafka.sh >/dev/null
	@set -e; for m in $(CODE_MODULES); do (cd $$m && $(GO) test -run '^$$' -bench . -benchmem ./...); done
	$(GO) run ./deploy/cmd/loadtest
	$(GO) run ./deploy/cmd/orderflowbench
	$(GO) run ./deploy/cmd/tradebench

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime 30s ./query-api/internal/live/
	$(GO) test -run '^$$' -fuzz FuzzDecodeEnvelope -fuzztime 30s ./topics/
	$(GO) test -run '^$$' -fuzz FuzzDecodeCompact -fuzztime 30s ./topics/
	$(GO) test -run '^$$' -fuzz FuzzEncodeData -fuzztime 30s ./topics/
	$(GO) test -run '^$$' -fuzz FuzzDecodeAccountEvent -fuzztime 30s ./topics/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30s ./settler/internal/settlement/
	$(GO) test -run '^$$' -fuzz FuzzDecodeJSONBytes -fuzztime 30s ./platform/httpx/
	$(GO) test -run '^$$' -fuzz FuzzVerify -fuzztime 30s ./platform/auth/
	$(GO) test -run '^$$' -fuzz '^FuzzParams$$' -fuzztime 30s ./ingress/internal/login/
	$(GO) test -run '^$$' -fuzz '^FuzzParseVerify$$' -fuzztime 30s ./ingress/internal/login/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRefresh$$' -fuzztime 30s ./ingress/internal/login/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePlace$$' -fuzztime 30s ./matcher/internal/engine/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePlace$$' -fuzztime 30s ./ingress/internal/orderentry/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeCancel$$' -fuzztime 30s ./ingress/internal/orderentry/
	$(GO) test -run '^$$' -fuzz '^FuzzApplyRecord$$' -fuzztime 30s ./matcher/internal/engine/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./platform/jsonrpc/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeTx$$' -fuzztime 30s ./platform/orderflow/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeBlobTx$$' -fuzztime 30s ./platform/orderflow/
	$(GO) test -run '^$$' -fuzz '^FuzzParseBundle$$' -fuzztime 30s ./platform/orderflow/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRefundQuery$$' -fuzztime 30s ./platform/orderflow/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCancel$$' -fuzztime 30s ./platform/orderflow/
	$(GO) test -run '^$$' -fuzz '^FuzzRecoverSigner$$' -fuzztime 30s ./platform/orderflow/
	$(GO) test -run '^$$' -fuzz '^FuzzWellFormedKey$$' -fuzztime 30s ./platform/orderflow/
	$(GO) test -run '^$$' -fuzz '^FuzzTxParam$$' -fuzztime 30s ./ingress/internal/flow/
	$(GO) test -run '^$$' -fuzz '^FuzzPathKey$$' -fuzztime 30s ./ingress/internal/flow/
	$(GO) test -run '^$$' -fuzz '^FuzzVerifyBody$$' -fuzztime 30s ./ingress/internal/flow/
	$(GO) test -run '^$$' -fuzz '^FuzzHashParam$$' -fuzztime 30s ./query-api/
	$(GO) test -run '^$$' -fuzz '^FuzzResult$$' -fuzztime 30s ./orderflow-relay/internal/stream/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRecord$$' -fuzztime 30s ./orderflow-relay/internal/builders/
	$(GO) test -run '^$$' -fuzz '^FuzzBatchErrors$$' -fuzztime 30s ./orderflow-relay/internal/builders/
	$(GO) test -run '^$$' -fuzz '^FuzzMembers$$' -fuzztime 30s ./platform/jsonrpc/
	$(GO) test -run '^$$' -fuzz '^FuzzSingleElement$$' -fuzztime 30s ./platform/jsonrpc/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodedTxAppendJSON$$' -fuzztime 30s ./topics/
	$(GO) test -run '^$$' -fuzz '^FuzzParseQueries$$' -fuzztime 30s ./query-api/internal/tradingreads/
	$(GO) test -run '^$$' -fuzz '^FuzzParseIDs$$' -fuzztime 30s ./query-api/internal/funding/
	$(GO) test -run '^$$' -fuzz '^FuzzParseTxQuery$$' -fuzztime 30s ./query-api/internal/funding/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30s ./settler/internal/ledger/
	$(GO) test -run '^$$' -fuzz '^FuzzWithdrawBody$$' -fuzztime 30s ./ingress/internal/funding/

# The REST interface against its OpenAPI document (Schemathesis, as in
# make test) with far more examples per operation and a new seed each run;
# the seed is in the report, FUZZ_API_SEED=<seed> repeats a run.
FUZZ_API_EXAMPLES ?= 500
FUZZ_API_SEED ?= random
fuzz-api:
	@bash scripts/ensure-postgres.sh
	@bash scripts/ensure-kafka.sh >/dev/null
	@bash scripts/ensure-schemathesis.sh >/dev/null
	FUZZ_API_EXAMPLES=$(FUZZ_API_EXAMPLES) FUZZ_API_SEED=$(FUZZ_API_SEED) $(GO) test -count=1 -timeout 60m -v -run '^TestAPIConformsToOpenAPI$$' ./deploy/devstack/

tidy:
	@set -e; for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy); done
