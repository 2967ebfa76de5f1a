# The ladder's server: `ladder serve`. Built from the repository's root:
#   docker build -f deploy/server.Dockerfile -t astragal-ladder .
# Written from Docker's documentation; not built on the project's machines
# (they run no Docker engine): see docs/hosting.md, "Operating".
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p astragal-ladder --bin ladder

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/ladder --create-home ladder
COPY --from=build /src/target/release/ladder /usr/local/bin/ladder
USER ladder
WORKDIR /var/lib/ladder
# gRPC (workers, admin, authors), the pages, the host's metrics.
EXPOSE 50060 8080 9100
# The admin token comes from a secret file (ASTRAGAL_ADMIN_TOKEN works too);
# --db from the environment of the deployment (sqlite:/var/lib/ladder/ladder.db
# on a volume, or postgres://...).
ENTRYPOINT ["ladder", "serve", "--listen", "0.0.0.0:50060", "--http", "0.0.0.0:8080", "--metrics", "0.0.0.0:9100"]
CMD ["--db", "sqlite:/var/lib/ladder/ladder.db", "--admin-token-file", "/run/secrets/admin_token"]
