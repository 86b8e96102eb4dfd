# syntax=docker/dockerfile:1
#
# settler: applies the log to the Postgres ledger; `settler -migrate` applies the SQL migrations and exits.
# Build from the repository root (the compose file does):
#   docker build -f deploy/docker/settler.Dockerfile .
# The whole workspace is copied because the modules reach each other through
# go.work and local replace directives; the caches keep rebuilds fast.

FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/settler ./settler/cmd/settler

# Static binary on a base with CA certificates and tzdata, no shell; runs as
# the image's unprivileged user (uid 65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/settler /usr/local/bin/settler
USER nonroot:nonroot
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/settler"]
