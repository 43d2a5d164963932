#!/usr/bin/env python3
"""Writes the JSON schemas kubeconform uses for the two custom resources the fedsearch chart can render
(a ServiceMonitor of the Prometheus Operator, a Certificate of cert-manager), in kubeconform's
`{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json` layout.

    python3 deploy/helm/crd-schemas/generate.py           # (re)write them
    python3 deploy/helm/crd-schemas/generate.py --check   # exit 1 when a file is stale

Written for this project from the two APIs' documented fields, not copied from their CRDs: every
object is closed (additionalProperties: false), the fields the chart sets are typed exactly (enums
where the API has them), the rest of each API's top-level spec fields are accepted with a loose type,
so a typo or a misplaced field fails. They are not the upstream CRDs: a value the real API server
would reject for a reason these schemas do not model can still pass.
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
STR = {"type": "string"}
INT = {"type": "integer"}
BOOL = {"type": "boolean"}
OBJ = {"type": "object"}
ARR = {"type": "array"}
STRMAP = {"type": "object", "additionalProperties": STR}


def closed(props, required=()):
    s = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        s["required"] = list(required)
    return s


def resource(api_version, kind, spec):
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "description": f"{kind} ({api_version}): the fields fedsearch's chart may render, closed.",
        **closed({
            "apiVersion": {"enum": [api_version]},
            "kind": {"enum": [kind]},
            "metadata": closed({
                "name": STR, "namespace": STR, "labels": STRMAP, "annotations": STRMAP,
            }, ["name"]),
            "spec": spec,
        }, ["apiVersion", "kind", "metadata", "spec"]),
    }


LABEL_SELECTOR = closed({
    "matchLabels": STRMAP,
    "matchExpressions": {"type": "array", "items": closed({
        "key": STR, "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
        "values": {"type": "array", "items": STR},
    }, ["key", "operator"])},
})
DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}

ENDPOINT = closed({
    "port": STR, "targetPort": {"type": ["integer", "string"]}, "path": STR,
    "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
    "params": {"type": "object", "additionalProperties": {"type": "array", "items": STR}},
    "interval": DURATION, "scrapeTimeout": DURATION,
    "honorLabels": BOOL, "honorTimestamps": BOOL, "trackTimestampsStaleness": BOOL,
    "followRedirects": BOOL, "enableHttp2": BOOL, "filterRunning": BOOL,
    "metricRelabelings": ARR, "relabelings": ARR,
    "tlsConfig": OBJ, "authorization": OBJ, "basicAuth": OBJ, "oauth2": OBJ, "bearerTokenSecret": OBJ,
    "bearerTokenFile": STR, "proxyUrl": STR, "noProxy": STR, "proxyFromEnvironment": BOOL,
    "proxyConnectHeader": OBJ,
})

SERVICE_MONITOR = resource("monitoring.coreos.com/v1", "ServiceMonitor", closed({
    "selector": LABEL_SELECTOR,
    "namespaceSelector": closed({"any": BOOL, "matchNames": {"type": "array", "items": STR}}),
    "endpoints": {"type": "array", "items": ENDPOINT},
    "jobLabel": STR, "targetLabels": {"type": "array", "items": STR},
    "podTargetLabels": {"type": "array", "items": STR},
    "sampleLimit": INT, "targetLimit": INT, "labelLimit": INT, "labelNameLengthLimit": INT,
    "labelValueLengthLimit": INT, "keepDroppedTargets": INT, "bodySizeLimit": STR,
    "scrapeProtocols": {"type": "array", "items": STR}, "fallbackScrapeProtocol": STR,
    "attachMetadata": OBJ, "scrapeClass": STR, "selectorMechanism": {"enum": ["RelabelConfig", "RoleSelector"]},
}, ["selector"]))

USAGES = ["signing", "digital signature", "content commitment", "key encipherment", "key agreement",
          "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
          "server auth", "client auth", "code signing", "email protection", "s/mime", "ipsec end system",
          "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc"]
GO_DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}

CERTIFICATE = resource("cert-manager.io/v1", "Certificate", closed({
    "secretName": STR,
    "issuerRef": closed({"name": STR, "kind": STR, "group": STR}, ["name"]),
    "commonName": {"type": "string", "maxLength": 64},
    "dnsNames": {"type": "array", "items": STR},
    "ipAddresses": {"type": "array", "items": STR},
    "uris": {"type": "array", "items": STR},
    "emailAddresses": {"type": "array", "items": STR},
    "duration": GO_DURATION, "renewBefore": GO_DURATION, "renewBeforePercentage": INT,
    "usages": {"type": "array", "items": {"enum": USAGES}},
    "privateKey": closed({
        "rotationPolicy": {"enum": ["Never", "Always"]},
        "encoding": {"enum": ["PKCS1", "PKCS8"]},
        "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
        "size": INT,
    }),
    "isCA": BOOL, "subject": OBJ, "literalSubject": STR, "secretTemplate": OBJ, "keystores": OBJ,
    "revisionHistoryLimit": INT, "additionalOutputFormats": ARR, "nameConstraints": OBJ,
    "otherNames": ARR, "encodeUsagesInRequest": BOOL,
}, ["secretName", "issuerRef"]))

FILES = {
    "monitoring.coreos.com/servicemonitor_v1.json": SERVICE_MONITOR,
    "cert-manager.io/certificate_v1.json": CERTIFICATE,
}


def main():
    check = sys.argv[1:] == ["--check"]
    stale = 0
    for name, schema in FILES.items():
        text = json.dumps(schema, indent=1, ensure_ascii=False) + "\n"
        path = HERE / name
        if check:
            if not path.exists() or path.read_text() != text:
                print(f"stale: deploy/helm/crd-schemas/{name}; run python3 deploy/helm/crd-schemas/generate.py")
                stale = 1
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return stale


if __name__ == "__main__":
    sys.exit(main())
