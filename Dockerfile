# The manager image for those who build with a container engine
# (make docker-build). `make image` is the source of truth: releases are
# built by it, without an engine, reproducibly (docs/install.md). This file
# builds the same binary with the same flags onto the same empty base, user
# and entrypoint; its timestamps are the engine's, so its digest differs.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -buildvcs=false \
    -ldflags="-s -w -X github.com/dynamicingress/dynamic-ingress-operator/internal/version.Version=${VERSION} -X github.com/dynamicingress/dynamic-ingress-operator/internal/version.Commit=${COMMIT}" \
    -o manager ./cmd

# Empty: no shell, no CA bundle (the manager embeds its roots).
FROM scratch
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${COMMIT} \
      org.opencontainers.image.source=https://github.com/dynamicingress/dynamic-ingress-operator \
      org.opencontainers.image.licenses=Apache-2.0 \
      org.opencontainers.image.title=dynamic-ingress-operator
COPY --from=builder --chmod=0555 /workspace/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
