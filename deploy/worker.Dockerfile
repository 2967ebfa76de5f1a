# A ladder worker: `ladder worker`, with the runtimes it offers authors'
# bots (python3, node, cc; add java or cargo by adding their packages) and
# bubblewrap, which contains every bot and build.
#   docker build -f deploy/worker.Dockerfile -t astragal-worker .
# Written from Docker's and bubblewrap's documentation; not built on the
# project's machines (they run no Docker engine).
#
# What bubblewrap needs inside a container: to make user, mount, PID, network
# and IPC namespaces. Docker's default seccomp profile refuses them to a
# process without CAP_SYS_ADMIN, and AppArmor's docker-default profile refuses
# the mounts, so run the container with
#   --security-opt seccomp=unconfined --security-opt apparmor=unconfined
# (or a seccomp profile of your own that allows clone/unshare with namespace
# flags, mount and pivot_root), and --security-opt systempaths=unconfined so
# that a bot's own /proc can be mounted. The worker refuses to start when its
# sandbox cannot be made (`ladder worker` checks it first), so a container
# without these fails at once, saying so, instead of playing unconfined.
# Running as root in the container lets each sandbox run as a uid of its own
# (--sandbox-uids); the container's user namespace maps them away from the
# host's users.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p astragal-ladder --bin ladder

FROM debian:bookworm-slim
# The JDK's packages write man links: slim images need the folder.
RUN mkdir -p /usr/share/man/man1 && apt-get update && apt-get install -y --no-install-recommends \
        ca-certificates bubblewrap util-linux python3 nodejs gcc g++ make openjdk-17-jdk-headless \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/ladder /usr/local/bin/ladder
WORKDIR /var/lib/ladder-worker
EXPOSE 9101
# SIGTERM: the worker stops leasing, lets the games in hand finish for
# --stop-within seconds, then gives back what it still holds (keep it under
# the orchestrator's grace period). The token comes from a secret file.
STOPSIGNAL SIGTERM
ENTRYPOINT ["ladder", "worker", "--sandbox", "isolated", "--metrics", "0.0.0.0:9101", "--stop-within", "20", "--cache-dir", "/var/lib/ladder-worker/cache"]
CMD ["--server", "http://ladder:50060", "--token-file", "/run/secrets/worker_token"]
