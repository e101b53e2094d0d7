# delayd and delayctl in one image: static binaries on an empty base, run as
# the unprivileged user 65532, no shell. The Kubernetes manifests
# (deploy/k8s) and `docker compose --profile delayd up` run it.
#
#   docker build -t delayq/delayd:v0.1.0 \
#     --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) .
#
# Without a Docker engine, `make image` writes the same image (tools/image
# reads the final stage below) as an OCI layout and a docker-archive tar.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG REVISION=unknown
# timetzdata: recurring tasks name time zones and the image has no zoneinfo.
RUN CGO_ENABLED=0 go build -trimpath -tags timetzdata \
      -ldflags "-s -w -X github.com/delayq/delayq/internal/version.Version=${VERSION} -X github.com/delayq/delayq/internal/version.Revision=${REVISION}" \
      -o /rootfs/usr/local/bin/ ./cmd/delayd ./cmd/delayctl \
 && mkdir -p /rootfs/etc/ssl/certs \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && cp deploy/image/passwd deploy/image/group /rootfs/etc/

FROM scratch
COPY --from=build /rootfs/ /
ENV PATH=/usr/local/bin
USER 65532:65532
# /metrics, /healthz, /readyz and the console (--http); the API role's --api.
EXPOSE 9464 8080
ENTRYPOINT ["/usr/local/bin/delayd"]
