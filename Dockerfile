# The operator image: a static manager binary on distroless, run as a non-root user with no shell.
# test/dockerfile checks this file (no container engine runs in CI): keep its COPY lines in step with the
# packages main.go imports.

FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Download modules first so this layer stays cached until go.mod or go.sum change.
COPY go.mod go.mod
COPY go.sum go.sum
RUN go mod download

# Only the packages the manager is built from.
COPY main.go main.go
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/

# GOARCH comes from the platform of the build (docker buildx --platform); the builder runs natively and
# cross-compiles, so multi-arch images need no emulation.
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} go build -trimpath -a -o manager .

# distroless/static: no shell, no libc, CA certificates and tzdata only.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
