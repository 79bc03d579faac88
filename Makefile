# make test: installs redis-server when it is missing, then runs vet and the
# race-enabled tests, which start their own redis-server processes.
GO ?= go

.PHONY: test vet redis-server demo

test: redis-server vet
	$(GO) test -race -count=1 -timeout 20m ./...
	cd bench/peers && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 20m ./...

vet:
	$(GO) vet ./...

redis-server:
	@./scripts/install-redis-server.sh

demo:
	$(GO) run ./cmd/redlock demo
