# claimdesk — the few commands people type.
.PHONY: run test lint bench deps

GO ?= go

# deps installs what the tests need and a fresh Debian machine lacks.
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	}

# run will serve the web app; the engine is here, the web app comes next.
run:
	@echo "claimdesk: the dispatch engine is built and tested (make test);"
	@echo "the web app (operator and supervisor pages, JSON API, make run) is the next milestone."

test: deps lint
	$(GO) test -count=1 ./...

lint:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 3000x ./internal/tasks/
