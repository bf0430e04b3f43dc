# syntax=docker/dockerfile:1
# Build stage: a static binary with the migrations embedded.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=docker
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/invoiced ./cmd/invoiced

# Run stage: no shell, no package manager, non-root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/invoiced /usr/local/bin/invoiced
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/invoiced"]
CMD ["serve"]
