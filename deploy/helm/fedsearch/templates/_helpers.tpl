{{/*
The deployed services (all but those with `enabled: false`), in a stable (alphabetical) order,
as a JSON list: range over `include "fedsearch.names" . | fromJsonArray`.
*/}}
{{- define "fedsearch.names" -}}
{{- $names := list -}}
{{- range $name := keys .Values.services | sortAlpha -}}
{{- if ne (index $.Values.services $name "enabled" | toString) "false" -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/*
mergeInto (list DST SRC): merges map SRC into map DST in place; maps merge recursively, anything
else (lists, scalars, false, 0, null) replaces. (sprig's merge/mergeOverwrite skip false and 0.)
*/}}
{{- define "fedsearch.mergeInto" -}}
{{- $dst := index . 0 -}}
{{- $src := index . 1 -}}
{{- range $k, $v := $src -}}
{{- if and (kindIs "map" $v) (kindIs "map" (index $dst $k)) -}}
{{- include "fedsearch.mergeInto" (list (index $dst $k) $v) -}}
{{- else -}}
{{- $_ := set $dst $k $v -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
svc (list ROOT NAME): the settings of one service, services.NAME over defaults, plus `name`; as
YAML, so: `$svc := include "fedsearch.svc" (list $ $name) | fromYaml`.
*/}}
{{- define "fedsearch.svc" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $own := index $root.Values.services $name -}}
{{- if not (kindIs "map" $own) -}}
{{- fail (printf "services.%s must be a map" $name) -}}
{{- end -}}
{{- if not $own.port -}}
{{- fail (printf "services.%s.port is required" $name) -}}
{{- end -}}
{{- $svc := deepCopy $root.Values.defaults -}}
{{- include "fedsearch.mergeInto" (list $svc (deepCopy $own)) -}}
{{- $_ := set $svc "name" $name -}}
{{- toYaml $svc -}}
{{- end -}}

{{/* labels (list ROOT SVC): the labels of every object of one service. */}}
{{- define "fedsearch.labels" -}}
{{- $root := index . 0 -}}
{{- $svc := index . 1 -}}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
app.kubernetes.io/name: {{ $svc.name }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ $svc.component | default "adapter" }}
app.kubernetes.io/part-of: fedsearch
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
{{- end -}}

{{/* commonLabels ROOT: the labels of objects that belong to no one service. */}}
{{- define "fedsearch.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: fedsearch
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* selector (list ROOT NAME): the labels that select one service's pods. */}}
{{- define "fedsearch.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{/* image (list ROOT SVC) */}}
{{- define "fedsearch.image" -}}
{{- $root := index . 0 -}}
{{- $svc := index . 1 -}}
{{- $img := $root.Values.image -}}
{{- $repo := dig "image" "repository" "" $svc | default (printf "%s%s/%s" ($img.registry | default "") $img.repositoryPrefix $svc.name) -}}
{{- $tag := dig "image" "tag" "" $svc | default $img.tag | default $root.Chart.AppVersion -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}

{{/* tlsSecret (list ROOT SVC): the name of the Secret with the service's certificate. */}}
{{- define "fedsearch.tlsSecret" -}}
{{- $svc := index . 1 -}}
{{- dig "tls" "secretName" "" $svc | default (printf "%s-tls" $svc.name) -}}
{{- end -}}

{{/* serviceHosts (list ROOT NAME): the DNS names of one Service, as a JSON list. */}}
{{- define "fedsearch.serviceHosts" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $ns := $root.Release.Namespace -}}
{{- list $name (printf "%s.%s" $name $ns) (printf "%s.%s.svc" $name $ns) (printf "%s.%s.svc.%s" $name $ns $root.Values.clusterDomain) | toJson -}}
{{- end -}}

{{/* mcpAllowedHosts (list ROOT CONFIG-LIST): the router's mcp.allowed_hosts, as a JSON list. */}}
{{- define "fedsearch.mcpAllowedHosts" -}}
{{- $root := index . 0 -}}
{{- $mcp := $root.Values.mcp -}}
{{- $hosts := index . 1 | default list -}}
{{- if $mcp.allowLoopback -}}
{{- $hosts = concat $hosts (list "localhost" "127.0.0.1" "::1") -}}
{{- end -}}
{{- if $mcp.allowServiceHosts -}}
{{- $hosts = concat $hosts (include "fedsearch.serviceHosts" (list $root "router") | fromJsonArray) -}}
{{- end -}}
{{- if $mcp.ingress.enabled -}}
{{- range $mcp.ingress.hosts -}}
{{- $hosts = append $hosts .host -}}
{{- end -}}
{{- end -}}
{{- $hosts = concat $hosts ($mcp.extraAllowedHosts | default list) -}}
{{- uniq $hosts | toJson -}}
{{- end -}}

{{/*
config (list ROOT SVC): the service's config file as it goes into its ConfigMap: files/config/NAME.yaml
(symlinks to deploy/config/NAME.yaml; the router's to deploy/compose/router.yaml), with
config.overrides merged in and, for the router, the `mcp` section set from .Values.mcp and the
vector source's registry entry added when services.vector-adapter is enabled.
*/}}
{{- define "fedsearch.config" -}}
{{- $root := index . 0 -}}
{{- $svc := index . 1 -}}
{{- $path := printf "files/config/%s.yaml" $svc.name -}}
{{- $text := $root.Files.Get $path -}}
{{- if not $text -}}
{{- fail (printf "%s is missing or empty (a symlink into deploy/config)" $path) -}}
{{- end -}}
{{- $cfg := fromYaml $text -}}
{{- if hasKey $cfg "Error" -}}
{{- fail (printf "%s: %s" $path (get $cfg "Error")) -}}
{{- end -}}
{{- include "fedsearch.mergeInto" (list $cfg (deepCopy (dig "config" "overrides" dict $svc))) -}}
{{- if $root.Values.admin.enabled -}}
{{- $admin := get $cfg "admin" | default dict -}}
{{- $_ := set $admin "listen" (printf "0.0.0.0:%v" $root.Values.admin.port) -}}
{{- $_ := set $cfg "admin" $admin -}}
{{- end -}}
{{- if eq $svc.name "router" -}}
{{- if has "vector-adapter" (include "fedsearch.names" $root | fromJsonArray) -}}
{{- /* the opt-in vector source: its registry entry (files/config/router-vector-source.yaml) joins `sources` */ -}}
{{- $entry := $root.Files.Get "files/config/router-vector-source.yaml" | fromYamlArray -}}
{{- $_ := set $cfg "sources" (concat (get $cfg "sources") $entry) -}}
{{- end -}}
{{- if $root.Values.mcp.enabled -}}
{{- $mcp := get $cfg "mcp" | default dict -}}
{{- $_ := set $mcp "listen" (printf "0.0.0.0:%v" $root.Values.mcp.port) -}}
{{- $_ := set $mcp "allowed_hosts" (include "fedsearch.mcpAllowedHosts" (list $root (get $mcp "allowed_hosts")) | fromJsonArray) -}}
{{- with $root.Values.mcp.allowedOrigins -}}
{{- $_ := set $mcp "allowed_origins" . -}}
{{- end -}}
{{- $_ := set $cfg "mcp" $mcp -}}
{{- else -}}
{{- $_ := unset $cfg "mcp" -}}
{{- end -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}
