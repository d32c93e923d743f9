# syntax=docker/dockerfile:1
#
# The release images, built by goreleaser (dockers_v2 in .goreleaser.yaml)
# for linux/amd64 and linux/arm64 from the binaries it has already built and
# stamped: its build context holds each at $TARGETPLATFORM/tether. The
# stages match the Dockerfile at the repository's root, which builds the
# same images from source; the bases are the same, pinned by digest.
# Needs BuildKit (docker buildx): $TARGETPLATFORM.

# An empty directory, owned by the images' user, for the server's volume.
FROM alpine:3.22@sha256:14358309a308569c32bdc37e2e0e9694be33a9d99e68afb0f5ff33cc1f695dce AS data
RUN mkdir -p /out/data

# ghcr.io/tetherhq/tether-agent: the reference agent, tether plus a shell
# for --exec. Add the tools your jobs need in an image built FROM it.
FROM alpine:3.22@sha256:14358309a308569c32bdc37e2e0e9694be33a9d99e68afb0f5ff33cc1f695dce AS agent
ARG TARGETPLATFORM
RUN apk add --no-cache ca-certificates && adduser -D -u 65532 -h /var/lib/tether-agent nonroot
COPY $TARGETPLATFORM/tether /usr/local/bin/tether
USER 65532:65532
WORKDIR /var/lib/tether-agent
ENTRYPOINT ["/usr/local/bin/tether"]
CMD ["agent", "run", "--help"]

# ghcr.io/tetherhq/tether: the server (and CLI) on distroless, non-root.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS server
ARG TARGETPLATFORM
COPY $TARGETPLATFORM/tether /usr/local/bin/tether
COPY --from=data --chown=65532:65532 /out/data /var/lib/tether
ENV TETHER_DB=/var/lib/tether/tether.db
VOLUME ["/var/lib/tether"]
EXPOSE 7070 9090
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tether"]
CMD ["serve", "--listen", "0.0.0.0:7070"]
