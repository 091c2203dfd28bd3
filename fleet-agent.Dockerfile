# The IoT fleet agent's image (cmd/fleet-agent, docs/iot.md): the static agent binary on distroless, run as a
# non-root user with no shell. It carries the agent only: the agent runs containers by executing `podman`,
# which this image does not have, so the device provides podman (docs/iot.md, "The agent's image").
# test/dockerfile checks this file as it checks Dockerfile: keep its COPY lines in step with the packages
# cmd/fleet-agent imports.

FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Download modules first so this layer stays cached until go.mod or go.sum change.
COPY go.mod go.mod
COPY go.sum go.sum
RUN go mod download

# Only the packages the agent is built from.
COPY cmd/fleet-agent/ cmd/fleet-agent/
COPY api/iot/ api/iot/
COPY internal/iot/fleet/ internal/iot/fleet/

# The builder runs natively and cross-compiles for the target (docker buildx --platform linux/arm64 for a
# Raspberry Pi), so multi-arch images need no emulation.
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} go build -trimpath -a -o fleet-agent ./cmd/fleet-agent

# distroless/static: no shell, no libc, CA certificates and tzdata only.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/fleet-agent .
USER 65532:65532

ENTRYPOINT ["/fleet-agent"]
