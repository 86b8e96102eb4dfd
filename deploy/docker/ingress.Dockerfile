# syntax=docker/dockerfile:1
#
# ingress: REST mutations, originator and searcher JSON-RPC, orderflow
# accounts, the slot clock and the chain watchers.
# Build from the repository root (the compose file does):
#   docker build -f deploy/docker/ingress.Dockerfile .
# The whole workspace is copied because the modules reach each other through
# go.work and local replace directives; the caches keep rebuilds fast.
#
# cgo is on: validator registration verifies BLS12-381 signatures with
# supranational/blst, whose Go bindings wrap its C and assembly code. The
# binary therefore links glibc dynamically and runs on distroless/base,
# which carries glibc besides CA certificates and tzdata.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=1
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/ingress ./ingress/cmd/ingress

# glibc, CA certificates and tzdata, no shell; runs as the image's
# unprivileged user (uid 65532). Debian 12 matches the glibc of golang:1.26.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/ingress /usr/local/bin/ingress
USER nonroot:nonroot
EXPOSE 8080 8081 8082 8083 9100
ENTRYPOINT ["/usr/local/bin/ingress"]
