# syntax=docker/dockerfile:1
#
# query-api: every REST read, the /ws WebSocket, orderflow tracking and refund reads.
# Build from the repository root (the compose file does):
#   docker build -f deploy/docker/query-api.Dockerfile .
# The whole workspace is copied because the modules reach each other through
# go.work and local replace directives; the caches keep rebuilds fast.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/query-api ./query-api/cmd/query-api

# Static binary on a base with CA certificates and tzdata, no shell; runs as
# the image's unprivileged user (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/query-api /usr/local/bin/query-api
USER nonroot:nonroot
EXPOSE 8080 8083 9100
ENTRYPOINT ["/usr/local/bin/query-api"]
