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
# again when it started it, whatever the outcome. e2e/fault, the longest
# package (~11 min, within the 30 min timeout), starts and removes a second,
# private stack of its own on other ports (heaps 384m + 768m) and takes its
# services away; the shared stack is never touched. e2e/secure (~3 min)
# starts a private SECURE=1 Kafka and Redis (29292-29294, 26379) the same way.
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
