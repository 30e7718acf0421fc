# claimdesk — the few commands people type.
.PHONY: run build test test-go e2e lint bench deps generate screenshots

GO ?= go
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1

# deps installs what a fresh Debian machine lacks: redis-server for the
# store and the tests, chromium for the browser tests, the npm packages.
deps: node_modules/.package-lock.json
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# The npm packages, as package-lock.json names them (npm ci writes
# node_modules/.package-lock.json, so this runs again only when it changes).
node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

# generate writes what is built from sources: the templ components' Go,
# and from the API's OpenAPI document the Go client's generated half
# (client/openapi.gen.go, by oapi-codegen) and the reference page.
generate: node_modules/.package-lock.json
	$(GO) tool templ generate
	$(GO) generate ./client
	npx redocly build-docs api/openapi.yaml --inlineBundle -o api/reference.html

# build writes bin/claimdesk with htmx (from npm) embedded.
build: deps generate
	mkdir -p static/vendor bin
	cp node_modules/htmx.org/dist/htmx.min.js static/vendor/htmx.min.js
	$(GO) build -o bin/claimdesk ./cmd/web

# run serves claimdesk on http://localhost:8080 with the demo data, on a
# private redis-server under ./var/redis, the webhooks' secrets sealed by
# a key of its own under ./var (or CLAIMDESK_WEBHOOK_KEY, when set).
run: build var/webhook-key
	./bin/claimdesk seed --if-empty
	CLAIMDESK_WEBHOOK_KEY=$${CLAIMDESK_WEBHOOK_KEY:-$$(cat var/webhook-key)} ./bin/claimdesk serve --addr 127.0.0.1:8080

# The key that seals the webhooks' secrets in the store of make run: made
# once, kept beside that store.
var/webhook-key:
	mkdir -p var
	umask 077; od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > $@

test: deps lint test-go e2e

test-go:
	$(GO) test -count=1 ./...

e2e: build
	npx playwright test --config e2e/playwright.config.ts

# The README's pictures: every page at 1366 and 390 px, from the demo data.
screenshots: build
	mkdir -p docs/screens
	npx playwright test --config e2e/shots.config.ts

# lint checks the Go (gofmt, vet, staticcheck, generated files current;
# gofmt and vet also the bench's asynq program, a module of its own), the
# page's script (static/app.js and js/: JSDoc types by tsc, eslint) and the
# API's OpenAPI document (Redocly's rules, redocly.yaml).
lint: node_modules/.package-lock.json generate
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	@[ -z "$$CI" ] || git diff --exit-code --stat -- "*_templ.go" client/openapi.gen.go api/reference.html || { echo "generated files are stale: run make generate and commit"; exit 1; }
	$(GO) vet ./...
	$(GO) -C cmd/bench/asynq vet ./...
	$(GO) tool staticcheck ./...
	npx tsc -p static
	npx eslint
	npx redocly lint api/openapi.yaml

# bench runs cmd/bench: every scenario, a table with PASS/FAIL per target,
# and var/bench.json. Flags for bigger runs: go run ./cmd/bench -h
bench: build
	$(GO) run ./cmd/bench -claimdesk bin/claimdesk
