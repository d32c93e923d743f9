# syntax=docker/dockerfile:1
#
# tether's container image: the static binary (CGO_ENABLED=0; the SQLite
# driver is pure Go) on a distroless, non-root base. Build it with
#
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t tether .
#
# and run the server on a volume:
#
#   docker run -p 7070:7070 -v tether-data:/var/lib/tether tether
#
# The "agent" target is the reference agent on a small base with a shell,
# since `tether agent run --exec` runs its command with /bin/sh:
#
#   docker build --target agent -t tether-agent .
#
# `make image` builds both, tagged like the release images the Helm chart
# runs (ghcr.io/tetherhq/tether and tether-agent, at the version).
#
# It needs BuildKit, for --platform=$BUILDPLATFORM and the RUN --mount
# caches: docker buildx build, or docker build on Docker 23 and later (the
# default builder there); DOCKER_BUILDKIT=1 on older Docker. The classic
# builder stops at the first RUN --mount.
#
# The bases are pinned by digest (tag and digest; the digest wins), the
# same as in deploy/docker/release.Dockerfile, from which the release
# images are built: update both together.

FROM --platform=$BUILDPLATFORM golang:1.26@sha256:3aff6657219a4d9c14e27fb1d8976c49c29fddb70ba835014f477e1c70636647 AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
ARG DATE=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w \
        -X github.com/tetherhq/tether/internal/buildinfo.Version=${VERSION} \
        -X github.com/tetherhq/tether/internal/buildinfo.Commit=${COMMIT} \
        -X github.com/tetherhq/tether/internal/buildinfo.Date=${DATE}" \
      -o /out/tether ./cmd/tether \
 && mkdir -p /out/data

# The reference agent: tether plus a shell for --exec. Add the tools your
# jobs need (kubectl, helm, ...) in an image built FROM this one.
FROM alpine:3.22@sha256:14358309a308569c32bdc37e2e0e9694be33a9d99e68afb0f5ff33cc1f695dce AS agent
RUN apk add --no-cache ca-certificates && adduser -D -u 65532 -h /var/lib/tether-agent nonroot
COPY --from=build /out/tether /usr/local/bin/tether
USER 65532:65532
WORKDIR /var/lib/tether-agent
ENTRYPOINT ["/usr/local/bin/tether"]
CMD ["agent", "run", "--help"]

# The server (the default target).
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS server
COPY --from=build /out/tether /usr/local/bin/tether
COPY --from=build --chown=65532:65532 /out/data /var/lib/tether
# The database (and its sealing key, unless --key-file names another) live
# on the volume. Every flag can be set as TETHER_<FLAG>, except --listen:
# the flag on CMD wins over TETHER_LISTEN; give the command instead
# (docker run ... tether serve --listen 0.0.0.0:8080).
ENV TETHER_DB=/var/lib/tether/tether.db
VOLUME ["/var/lib/tether"]
# 7070: the agent API, /healthz, /readyz, and /metrics to an admin token.
# 9090: --diag-listen (metrics without a token, and pprof), when enabled.
EXPOSE 7070 9090
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tether"]
CMD ["serve", "--listen", "0.0.0.0:7070"]
