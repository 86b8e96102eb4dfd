# syntax=docker/dockerfile:1
#
# orderflow-relay: searcher WebSocket fan-out, bundle intake, builder forwarding.
# Build from the repository root (the compose file does):
#   docker build -f deploy/docker/orderflow-relay.Dockerfile .
# The whole workspace is copied because the modules reach each other through
# go.work and local replace directives; the caches keep rebuilds fast.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/orderflow-relay ./orderflow-relay/cmd/orderflow-relay

# Static binary on a base with CA certificates and tzdata, no shell; runs as
# the image's unprivileged user (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/orderflow-relay /usr/local/bin/orderflow-relay
USER nonroot:nonroot
EXPOSE 8082 9100
ENTRYPOINT ["/usr/local/bin/orderflow-relay"]
