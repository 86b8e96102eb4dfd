# syntax=docker/dockerfile:1
#
# matcher: the sequencer, one writer per slot partition of the orders topic.
# Build from the repository root (the compose file does):
#   docker build -f deploy/docker/matcher.Dockerfile .
# The whole workspace is copied because the modules reach each other through
# go.work and local replace directives; the caches keep rebuilds fast.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/matcher ./matcher/cmd/matcher

# Static binary on a base with CA certificates and tzdata, no shell; runs as
# the image's unprivileged user (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/matcher /usr/local/bin/matcher
USER nonroot:nonroot
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/matcher"]
