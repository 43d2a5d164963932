# The two commands a newcomer needs: `make demo` and `make test`.
.PHONY: demo test build bench clean backends-start backends-stop fmt lint

demo:
	scripts/demo.sh $(DEMO_ARGS)

test:
	scripts/test.sh

build:
	cargo build --workspace

bench:
	scripts/bench.sh

backends-start:
	scripts/backends/all.sh start

backends-stop:
	scripts/backends/all.sh stop

fmt:
	cargo fmt --all

lint:
	cargo clippy --workspace --all-targets -- -D warnings

clean:
	scripts/backends/all.sh stop || true
	rm -rf .run
