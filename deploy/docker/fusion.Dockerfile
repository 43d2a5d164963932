# syntax=docker/dockerfile:1
# GENERATED from deploy/docker/Dockerfile.in by deploy/docker/generate.sh: edit the template and
# re-run the script (scripts/validate-deploy.sh fails when this file and the template disagree).
#
# fusion (crate fedsearch-fusion): deduplicates and fuses per-source result lists into one ranked list
# Build from the repository root:
#   docker build -f deploy/docker/fusion.Dockerfile -t fedsearch/fusion .
# Run: the example config deploy/config/fusion.yaml is baked in at /etc/fedsearch/fusion.yaml;
# mount another file over it (compose volume, Kubernetes ConfigMap) and pass secrets as
# FEDSEARCH_* environment variables or files, never in the image.

# --- planner: reduce the workspace to what decides the dependency graph (see plan.sh) ----------
FROM rust:1.95-bookworm AS planner
WORKDIR /src
COPY . .
RUN bash deploy/docker/plan.sh /src /plan

# --- builder: third-party crates first (cached until a manifest/lock/build.rs/proto changes) ----
FROM rust:1.95-bookworm AS builder
WORKDIR /build
COPY --from=planner /plan/ ./
RUN cargo build --release --locked -p fedsearch-fusion --bin fusion
# Then the real sources. COPY keeps the files' old mtimes, so touch them: cargo must see that the
# workspace crates changed since the stub build above.
COPY . .
RUN find crates -name '*.rs' -exec touch {} + \
 && cargo build --release --locked -p fedsearch-fusion --bin fusion \
 && for b in fusion; do install -D -m 0755 "target/release/$b" "/out/$b"; done

# --- runtime: glibc + libgcc + CA certificates, no shell, no package manager ---------------------
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /out/ /usr/local/bin/
COPY deploy/config/fusion.yaml /etc/fedsearch/fusion.yaml
# Example configs listen on loopback; in a container listen on every interface (the router's MCP
# endpoint too; it still accepts only the Host names in mcp.allowed_hosts, by default localhost).
ENV FEDSEARCH_SERVER__LISTEN=0.0.0.0:50052
# The config path is an argument, not FEDSEARCH_CONFIG: fedsearch-core reads every FEDSEARCH_*
# variable as a config key, and `config` is not one.
USER 10001:10001
EXPOSE 50052
# No HEALTHCHECK: distroless has no shell or probe binary. Health is gRPC `grpc.health.v1`
# (service "" and the service's own name); Kubernetes uses native gRPC probes (deploy/k8s/).
ENTRYPOINT ["/usr/local/bin/fusion", "--config", "/etc/fedsearch/fusion.yaml"]
