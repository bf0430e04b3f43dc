# syntax=docker/dockerfile:1
# Build stage: a static binary with the migrations and web assets embedded.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=docker
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/invoiced ./cmd/invoiced

# Run stage: the binary, CA certificates (for a hosted model's TLS) and
# nothing else; no shell, no package manager, not root.
FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/invoiced /invoiced
EXPOSE 8080
USER 65532:65532
ENTRYPOINT ["/invoiced"]
CMD ["serve"]
