# syntax=docker/dockerfile:1
#
# topicctl: creates or updates every topic of the catalog (`topicctl -brokers kafka:9092 apply`).
# Build from the repository root (the compose file does):
#   docker build -f deploy/docker/topicctl.Dockerfile .
# The whole workspace is copied because the modules reach each other through
# go.work and local replace directives; the caches keep rebuilds fast.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/topicctl ./deploy/cmd/topicctl

# Static binary on a base with CA certificates and tzdata, no shell; runs as
# the image's unprivileged user (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/topicctl /usr/local/bin/topicctl
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/topicctl"]
