#!/usr/bin/env bash
# validate-deploy.sh — static validation of the deploy artefacts (run by `make test`): no container
# engine or cluster is needed, only docker-compose (Debian package, parses without an engine),
# python3 with PyYAML, and cargo (for `cargo metadata`, offline).
#
#   generated files are current   deploy/docker/*.Dockerfile, deploy/compose/router.yaml, deploy/k8s/*.yaml
#   dependency plan               deploy/docker/plan.sh stubs every cargo target of the workspace
#   docker-compose.yml            `docker-compose config -q` passes with the secrets set, fails without
#   Dockerfiles                   pinned FROM tags, non-root USER last, no ADD of URLs, no secret-named
#                                 ENV/ARG with a value, every COPY source exists, EXPOSE, ENTRYPOINT
#   compose semantics             hardening, ports, healthchecks, env vars the configs name, no literal secrets
#   k8s manifests                 parse; gRPC probes, resources, securityContext, Services, PDB,
#                                 NetworkPolicy (only the router reaches fusion and the adapters), secret refs
#   shell scripts                 `bash -n` of the scripts the images and compose run
#
# Prints `ok   <check>` or `FAIL <check>: <why>` per check and last `deploy: N passed, M failed`;
# exits 1 when anything failed.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT"

passed=0 failed=0
ok()   { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# check NAME CMD... — runs CMD; its output becomes the reason when it fails.
check() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name"; else fail "$name" "$(tr '\n' ' ' <<<"$out" | sed 's/ *$//')"; fi
}

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

# --- generated files ------------------------------------------------------------------------------
check "dockerfiles match deploy/docker/Dockerfile.in" bash deploy/docker/generate.sh --check
check "deploy/compose/router.yaml matches deploy/config/router.yaml" bash deploy/compose/generate-router-config.sh --check
check "deploy/k8s manifests match deploy/k8s/generate.py" python3 deploy/k8s/generate.py --check

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
done < <(python3 - "$FEDSEARCH_ROOT" "$tmp/compose.resolved.yml" <<'PY' 2>&1 || echo "FAIL python checks: crashed (see above)"
import os, pathlib, re, sys
import yaml

root = pathlib.Path(sys.argv[1])
resolved = pathlib.Path(sys.argv[2])
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|API_?KEY|CREDENTIAL|DATABASE_URL|DSN", re.I)
SERVICES = {"router": 50051, "fusion": 50052, "es-adapter": 50061, "sql-adapter": 50062, "wiki-adapter": 50063}


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
        if key in ("FEDSEARCH_CONFIG",) or (key.startswith("FEDSEARCH_") and not re.fullmatch(r"FEDSEARCH_[A-Z0-9]+(__[A-Z0-9_]+)*", key)):
            problems.append(f"{name}: env {key} would be read as an unknown config key")
    # Every env var the service's config names (url_env, secrets_file_env, ...) is provided.
    if mounted_config and pathlib.Path(mounted_config).is_file():
        wanted = set(ENV_REF.findall(pathlib.Path(mounted_config).read_text()))
        for var in sorted(wanted - set(env)):
            problems.append(f"{name}: its config reads ${var} but the service does not set it")
    ports = s.get("ports") or []
    if name != "router" and ports:
        problems.append(f"{name}: publishes ports (only the router is an entry point)")
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
report("compose: ports on loopback, healthchecks, conditions, no literal secrets", problems)

# ---- Kubernetes ----------------------------------------------------------------------------------
docs, parse_problems = [], []
for f in sorted(root.glob("deploy/k8s/*.yaml")):
    try:
        for d in yaml.safe_load_all(f.read_text()):
            if d:
                if d.get("kind") == "Kustomization":
                    listed = set(d.get("resources", []))
                    on_disk = {g.name for g in f.parent.glob("*.yaml")} - {f.name}
                    if listed != on_disk:
                        parse_problems.append(f"kustomization.yaml resources {sorted(listed)} != files {sorted(on_disk)}")
                    continue
                if not {"apiVersion", "kind"} <= set(d) or "name" not in (d.get("metadata") or {}):
                    parse_problems.append(f"{f.name}: a document without apiVersion/kind/metadata.name")
                docs.append((f.name, d))
    except yaml.YAMLError as e:
        parse_problems.append(f"{f.name}: {str(e).splitlines()[0]}")
report("k8s: every manifest parses", parse_problems)

by_kind = {}
for fname, d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
config_maps = {d["metadata"]["name"]: d for d in by_kind.get("ConfigMap", [])}


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


deployments = {d["metadata"]["name"]: d for d in by_kind.get("Deployment", [])}
for name, port in SERVICES.items():
    problems = []
    d = deployments.get(name)
    if d is None:
        report(f"k8s: {name} deployment", [f"no Deployment {name}"])
        continue
    spec = d["spec"]
    tmpl = spec["template"]
    pod_labels = tmpl["metadata"].get("labels", {})
    if not matches(spec["selector"].get("matchLabels"), pod_labels):
        problems.append("selector does not match the pod labels")
    pod = tmpl["spec"]
    psc = pod.get("securityContext") or {}
    if psc.get("runAsNonRoot") is not True:
        problems.append("pod securityContext.runAsNonRoot is not true")
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
        if (psc.get("runAsNonRoot") is not True and csc.get("runAsNonRoot") is not True):
            problems.append(f"{c['name']}: runAsNonRoot is not set")
        res = c.get("resources") or {}
        if not {"cpu", "memory"} <= set(res.get("requests") or {}):
            problems.append(f"{c['name']}: resources.requests needs cpu and memory")
        if "memory" not in (res.get("limits") or {}):
            problems.append(f"{c['name']}: resources.limits needs memory")
        ports = [p.get("containerPort") for p in c.get("ports", [])]
        if port not in ports:
            problems.append(f"{c['name']}: containerPort {port} missing")
        for probe in ("readinessProbe", "livenessProbe"):
            grpc = (c.get(probe) or {}).get("grpc") or {}
            if grpc.get("port") != port:
                problems.append(f"{c['name']}: {probe} is not a native gRPC probe on {port}")
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
                problems.append(f"ConfigMap {v['configMap']['name']} is not in deploy/k8s")
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
    services = [s for s in by_kind.get("Service", []) if matches(s["spec"].get("selector"), pod_labels)]
    if not services:
        problems.append("no Service selects its pods")
    for s in services:
        if s["metadata"]["name"] != name:
            problems.append(f"Service {s['metadata']['name']} should be named {name} (router.yaml uses http://{name}:{port})")
        for sp in s["spec"]["ports"]:
            if sp.get("port") != port:
                problems.append(f"Service port {sp.get('port')} != {port}")
    report(f"k8s: {name} deployment (probes, resources, securityContext, service)", problems)

problems = []
router_labels = deployments.get("router", {}).get("spec", {}).get("template", {}).get("metadata", {}).get("labels", {})
if not any(matches(p["spec"]["selector"].get("matchLabels"), router_labels) for p in by_kind.get("PodDisruptionBudget", [])):
    problems.append("no PodDisruptionBudget selects the router pods")
report("k8s: router PodDisruptionBudget", problems)

problems = []
policies = by_kind.get("NetworkPolicy", [])
if not any(p["spec"].get("podSelector") == {} and "Ingress" in p["spec"].get("policyTypes", []) and not p["spec"].get("ingress") for p in policies):
    problems.append("no default-deny ingress policy")
for name in SERVICES:
    if name == "router" or name not in deployments:
        continue
    labels = deployments[name]["spec"]["template"]["metadata"]["labels"]
    selecting = [p for p in policies if matches(p["spec"]["podSelector"].get("matchLabels"), labels)]
    if not selecting:
        problems.append(f"no policy selects {name}")
    for p in selecting:
        for rule in p["spec"].get("ingress", []):
            peers = rule.get("from")
            if not peers:
                problems.append(f"{p['metadata']['name']}: lets anyone reach {name}")
            for peer in peers or []:
                if set(peer) != {"podSelector"} or not matches(peer["podSelector"].get("matchLabels"), router_labels):
                    problems.append(f"{p['metadata']['name']}: lets a non-router peer reach {name}: {peer}")
report("k8s: NetworkPolicy lets only the router reach fusion and the adapters", problems)

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
    problems.append(f"Secret manifests with values are committed: {shipped}")
readme = (root / "deploy/k8s/README.md").read_text() if (root / "deploy/k8s/README.md").exists() else ""
for s in sorted(secret_refs):
    if s not in readme:
        problems.append(f"Secret {s} is referenced but deploy/k8s/README.md does not say how to create it")
jwt = any(e.get("name") == "FEDSEARCH_AUTH__HS256_SECRET" and "valueFrom" in e
          for c in deployments.get("router", {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
          for e in c.get("env", []))
if not jwt:
    problems.append("router does not take FEDSEARCH_AUTH__HS256_SECRET from a Secret")
report("k8s: secrets only referenced, each documented", problems)
PY
)

echo "deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
