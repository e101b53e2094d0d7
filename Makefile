# delayq — the two commands of the README are `make run` and `make test`.
STACK := deploy/local/stack
GO    ?= go
# Set by `make test` when it had to start the stack, so that it stops it again.
STARTED := .local/.started-by-make

.PHONY: up down status run test vet unit integration tools

up:
	$(STACK) up

down:
	$(STACK) down

status:
	$(STACK) status

run:
	$(GO) run ./cmd/delayd --embedded

# The Debian packages tests drive besides the stack: chromium (the
# console's browser test) and prometheus (promtool). `make test` runs it.
tools:
	deploy/local/tools

vet:
	$(GO) vet ./...

# Unit tests only: no services needed (integration tests skip with a message
# saying `make up`, except under CI=true where they fail).
unit:
	$(GO) test -race -short ./...

# The full suite: brings the stack up when it is not, runs vet and every test
# (integration tests included) with the race detector, and stops the stack
# again when it started it, whatever the outcome. e2e/fault and
# e2e/failover, the longest packages (~11 min each, within the 30 min
# timeout; go test runs two packages at a time on 2 cores, so they may
# overlap), start and remove private stacks of their own on other ports
# (e2e/fault: heaps 384m + 768m; e2e/failover: a CLUSTER=1 stack of seven
# JVMs, about 3.5 GB) and take their services away; the shared stack is
# never touched.
test:
	@deploy/local/tools
	@mkdir -p .local
	@if $(STACK) status >/dev/null 2>&1; then \
		echo "make test: using the running local stack"; \
	else \
		touch $(STARTED); $(STACK) up; \
	fi
	@rc=0; \
	$(GO) vet ./... || rc=$$?; \
	if [ $$rc -eq 0 ]; then $(GO) test -race -count=1 -timeout 30m ./... || rc=$$?; fi; \
	if [ $$rc -eq 0 ]; then $(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 10s ./payload || rc=$$?; fi; \
	if [ -f $(STARTED) ]; then rm -f $(STARTED); $(STACK) down; fi; \
	exit $$rc
