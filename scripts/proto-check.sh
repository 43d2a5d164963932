#!/usr/bin/env bash
# proto-check.sh — the contract in proto/ (run by `make test`): buf lint, buf format, buf breaking
# against the tagged contracts, and Go stubs generated without M flags and compiled.
#
# Tools, pinned, from the Go module proxy only, cached so that a second run installs nothing: buf,
# protoc-gen-go and protoc-gen-go-grpc are `go install`ed into ~/go/bin (reused by every clone on
# the machine when the version matches), else into $FEDSEARCH_RUN_DIR/tools/bin when ~/go/bin holds
# another version. The Go stubs' dependencies come from the module cache after the first run.
#
#   buf lint            buf.yaml (STANDARD; the exceptions are explained there)
#   buf format          proto/ is as `buf format` writes it
#   buf breaking FILE   against the newest contract tag: no change that generated code would notice
#   buf breaking WIRE_JSON  against every contract-v1* tag: every service and client of v1 still
#                       talks to this contract, in binary and in JSON
#   Go stubs            `buf generate` (buf.gen.yaml, no M flags) into a temp module; go vet, and a
#                       go test that the packages, services and a message round trip are as named
#
# A contract tag that is missing in this clone (tags need not travel with a push) is read from the
# commit it names below; a tag that names another commit fails. Prints `ok   <check>` or
# `FAIL <check>: <why>` per check and last `proto: N passed, M failed`; exits 1 when anything failed.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FEDSEARCH_ROOT"

BUF_VERSION=v1.75.0
PROTOC_GEN_GO_VERSION=v1.36.12     # google.golang.org/protobuf, also the stubs' runtime
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2
GRPC_GO_VERSION=v1.85.0            # google.golang.org/grpc, the stubs' runtime

# The released contracts, oldest first: "tag commit". The newest is the FILE baseline.
#   contract-v1    the contract before buf (no language options)
#   contract-v1.1  + language options (go_package, java_package, ...): wire and JSON identical
CONTRACTS=(
  "contract-v1 67561cb4ffc9721a8c13c1632ffd6cef3974d64d"
  "contract-v1.1 0bace837107a529760b7e93d69333f089a682b46"
)

. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
finish() { checks_summary proto; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -d /usr/local/go/bin ] && PATH=$PATH:/usr/local/go/bin
TOOLS=$FEDSEARCH_RUN_DIR/tools

# install_go_tool VAR NAME PACKAGE MODULE VERSION — sets VAR to NAME built from MODULE@VERSION:
# ~/go/bin/NAME or $TOOLS/bin/NAME if either is that version, else `go install`s it (into ~/go/bin
# when NAME is not there at all, else into $TOOLS/bin, leaving another version alone).
install_go_tool() {
  local var=$1 name=$2 pkg=$3 mod=$4 version=$5 dir
  command -v go >/dev/null || { echo "go is not installed (needed to build $name from the Go module proxy)"; return 1; }
  local gobin
  gobin=$(go env GOPATH)/bin
  for dir in "$gobin" "$TOOLS/bin"; do
    if [ -x "$dir/$name" ] && go version -m "$dir/$name" 2>/dev/null \
      | grep -qE "^[[:space:]]+mod[[:space:]]+$mod[[:space:]]+$version([[:space:]]|$)"; then
      printf -v "$var" '%s' "$dir/$name"
      return 0
    fi
  done
  dir=$gobin
  [ -e "$gobin/$name" ] && dir=$TOOLS/bin
  log "building $name $version into $dir (go install $pkg@$version, once)" 2>&3
  mkdir -p "$dir"
  GOBIN=$dir go install "$pkg@$version" || return 1
  printf -v "$var" '%s' "$dir/$name"
}

exec 3>&2   # install progress reaches the terminal; install errors become the check's reason
BUF='' GEN_GO='' GEN_GO_GRPC=''
if install_go_tool BUF buf github.com/bufbuild/buf/cmd/buf github.com/bufbuild/buf "$BUF_VERSION" >"$tmp/tools.log" 2>&1 \
  && install_go_tool GEN_GO protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/protobuf \
    "$PROTOC_GEN_GO_VERSION" >>"$tmp/tools.log" 2>&1 \
  && install_go_tool GEN_GO_GRPC protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc \
    google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" >>"$tmp/tools.log" 2>&1; then
  ok "tools: buf $BUF_VERSION, protoc-gen-go $PROTOC_GEN_GO_VERSION, protoc-gen-go-grpc $PROTOC_GEN_GO_GRPC_VERSION"
else
  fail "tools" "$(tr '\n' ' ' <"$tmp/tools.log" | tail -c 1500)"
  finish
  exit
fi
# buf finds the local plugins of buf.gen.yaml on PATH: exactly the versions above.
mkdir -p "$tmp/plugins"
ln -s "$GEN_GO" "$tmp/plugins/protoc-gen-go"
ln -s "$GEN_GO_GRPC" "$tmp/plugins/protoc-gen-go-grpc"
export BUF_CACHE_DIR=$TOOLS/buf-cache

check "buf lint (buf.yaml)" "$BUF" lint
check "buf format (proto/ as buf formats it)" "$BUF" format -d --exit-code proto

# contract_tree TAG COMMIT DIR — writes proto/ of the contract TAG (or, without the tag in this
# clone, of COMMIT) into DIR.
contract_tree() {
  local tag=$1 commit=$2 dir=$3 at
  if at=$(git rev-parse -q --verify "refs/tags/$tag^{commit}"); then
    [ "$at" = "$commit" ] || { echo "tag $tag names $at, not the released contract $commit"; return 1; }
  else
    git cat-file -e "$commit^{commit}" 2>/dev/null \
      || { echo "neither tag $tag nor its commit $commit is in this clone (a shallow clone?)"; return 1; }
  fi
  mkdir -p "$dir"
  git archive "$commit" proto | tar -x -C "$dir"
}

# A contract tagged here but not listed above would never be compared against.
unlisted=$(git tag -l 'contract-*' | while read -r t; do
  printf '%s\n' "${CONTRACTS[@]}" | grep -q "^$t " || echo "$t"; done)
if [ -n "$unlisted" ]; then
  fail "contract tags listed" "tagged but not in CONTRACTS of scripts/proto-check.sh: $(echo $unlisted)"
fi

WIRE_JSON='{"version":"v2","modules":[{"path":"proto"}],"breaking":{"use":["WIRE_JSON"]}}'
newest=${CONTRACTS[${#CONTRACTS[@]} - 1]}
for entry in "${CONTRACTS[@]}"; do
  read -r tag commit <<<"$entry"
  if ! out=$(contract_tree "$tag" "$commit" "$tmp/base/$tag" 2>&1); then
    fail "contract $tag" "$out"
    continue
  fi
  case $tag in contract-v1 | contract-v1.*)
    check "buf breaking WIRE_JSON against $tag" "$BUF" breaking --config "$WIRE_JSON" --against "$tmp/base/$tag/proto" ;;
  esac
  if [ "$entry" = "$newest" ]; then
    check "buf breaking FILE (buf.yaml) against $tag, the newest contract" "$BUF" breaking --against "$tmp/base/$tag/proto"
  fi
done

# Go stubs: generated with buf.gen.yaml alone (the go_package options name every import), in a
# module `fedsearch/gen/go` whose root is the output directory.
go_stubs() {
  local mod=$tmp/go
  mkdir -p "$mod"
  PATH=$tmp/plugins:$PATH "$BUF" generate --template buf.gen.yaml -o "$mod" || return 1
  cat >"$mod/go.mod" <<'EOF'
module fedsearch/gen/go

go 1.24
EOF
  cat >"$mod/stubs_test.go" <<'EOF'
package stubs

import (
	"testing"

	"google.golang.org/protobuf/proto"

	adapterv1 "fedsearch/gen/go/fedsearch/adapter/v1"
	fusionv1 "fedsearch/gen/go/fedsearch/fusion/v1"
	typesv1 "fedsearch/gen/go/fedsearch/types/v1"
	fedsearchv1 "fedsearch/gen/go/fedsearch/v1"
)

func TestTheStubsAreTheContract(t *testing.T) {
	for got, want := range map[string]string{
		fedsearchv1.FederatedSearch_ServiceDesc.ServiceName: "fedsearch.v1.FederatedSearch",
		adapterv1.SourceAdapter_ServiceDesc.ServiceName:     "fedsearch.adapter.v1.SourceAdapter",
		fusionv1.Fusion_ServiceDesc.ServiceName:             "fedsearch.fusion.v1.Fusion",
		fedsearchv1.FederatedSearch_Search_FullMethodName:   "/fedsearch.v1.FederatedSearch/Search",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	in := &fedsearchv1.SearchRequest{Query: "SO20261004 支付超时", TopK: 5, Sources: []string{"orders"},
		Filters: &typesv1.Filters{DocTypes: []string{"order"}}}
	wire, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := &fedsearchv1.SearchRequest{}
	if err := proto.Unmarshal(wire, out); err != nil || !proto.Equal(in, out) {
		t.Fatalf("round trip: %v %v", out, err)
	}
}
EOF
  (
    cd "$mod"
    go get "google.golang.org/protobuf@$PROTOC_GEN_GO_VERSION" "google.golang.org/grpc@$GRPC_GO_VERSION" \
      && go mod tidy && go vet ./... && go test -count=1 ./...
  )
}
check "Go stubs: buf generate without M flags, go vet, go test (protobuf $PROTOC_GEN_GO_VERSION, grpc $GRPC_GO_VERSION)" go_stubs

finish
