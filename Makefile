# delayq — the two commands of the README are `make run` and `make test`.
STACK := deploy/local/stack
GO    ?= go
# Set by `make test` when it had to start the stack, so that it stops it again.
STARTED := .local/.started-by-make

.PHONY: up down status run test vet lint unit integration tools image dist faults soak redisloss-large

up:
	$(STACK) up

down:
	$(STACK) down

status:
	$(STACK) status

# `make run ARGS='--brokers 127.0.0.1:19092 --redis 127.0.0.1:16379 --http
# 127.0.0.1:19464'`: ARGS go to delayd after --embedded (any flag of
# `delayd --help`). The first build compiles about 450 packages and takes
# minutes on a small machine: -v names each package as it is compiled;
# later builds take Go's cache and print nothing.
ARGS ?=
run:
	@echo "make run: building delayd into bin/delayd (the first build compiles ~450 packages and takes a few minutes; later ones seconds)"
	$(GO) build -v -o bin/delayd ./cmd/delayd
	bin/delayd --embedded $(ARGS)

# The Debian packages tests drive besides the stack: chromium (the
# console's browser test), prometheus (promtool), openssl, and kcat and curl
# (e2e/docexamples runs the docs' examples). `make test` runs it.
tools:
	deploy/local/tools

vet:
	$(GO) vet ./...

# Shape limit of every non-test package: no cognitive complexity over 30
# (gocognit, installed into GOPATH/bin when missing; it walks the tree),
# except the functions named with their reasons in .ci/gocognit-exceptions;
# a named one no longer over 30 fails too, so the list only shrinks.
# taskstate's TestFunctionLength checks the 80-line limit.
GOCOGNIT := $(shell $(GO) env GOPATH)/bin/gocognit
GOCOGNIT_EXCEPTIONS := .ci/gocognit-exceptions
lint:
	@test -x $(GOCOGNIT) || $(GO) install github.com/uudashr/gocognit/cmd/gocognit@v1.3.0
	@$(GOCOGNIT) -over 30 -ignore '_test\.go$$' -f '{{.Complexity}} {{.Pos.Filename}} {{.FuncName}}{{"\n"}}' . | \
	awk 'NR == FNR { sub(/ *#.*/, ""); if (NF == 2) named[$$1 " " $$2] = 1; next } \
	  NF == 3 { k = $$2 " " $$3; if (k in named) { seen[k] = 1; next } print "gocognit " $$1 ": " k " (over 30; split it, or name it in $(GOCOGNIT_EXCEPTIONS) with a reason)"; bad = 1 } \
	  END { for (k in named) if (!(k in seen)) { print "$(GOCOGNIT_EXCEPTIONS): " k " is no longer over 30; take it off the list"; bad = 1 } exit bad }' \
	  $(GOCOGNIT_EXCEPTIONS) -

# Unit tests only: no services needed (integration tests skip with a message
# saying `make up`, except under CI=true where they fail).
unit:
	$(GO) test -race -short ./...

# The full suite: brings the stack up when it is not, runs vet and every test
# (integration tests included) with the race detector, and stops the stack
# again when it started it, whatever the outcome. Most of its time is e2e
# packages waiting for due times and outages, not CPU, so go test runs
# TEST_P (3) packages at a time, the longest first (SLOW_PKGS; go test
# starts packages in the order given, ./... adds the rest once). With 4 at
# a time the whole CI run took 28.5 minutes on 2 cores and ~24 GB, but the
# load (average 50) made e2e take 26 of its 30-minute timeout and broke
# two timing checks; 2 at a time in alphabetical order with the fault
# tests' full form took 47. Peak memory is a few private stacks at once,
# under 10 GB; `make test TEST_P=2` on a smaller machine.
# e2e/failover (a CLUSTER=1 stack of seven JVMs, about 3.5 GB), e2e/fault
# (heaps 384m + 768m), e2e/redisloss, e2e/redisha, e2e/pause, e2e/secure
# (a SECURE=1 Kafka and Redis, 29292-29294, 26379) and e2e/netfault (a stack
# behind toxiproxy, 31000-31095, 127.0.0.2:31020) start and remove private
# stacks of their own on other ports and take their services away; the
# shared stack is never touched. The fault packages run each fault in its
# shortest honest form (fewer kills and restarts, shorter outages;
# `make faults` runs the soak-length ones). The tests of e2e and
# e2e/docexamples that run delayd on the shared stack take turns on a lock
# ($TMPDIR/delayq-e2e.lock), test by test, and so does the Python client's
# integration tests: clients/python/test.sh, then clients/java/test.sh, run
# beside go test, their output printed after it.
TEST_P    ?= 3
SLOW_PKGS := ./e2e/failover ./e2e/fault ./e2e ./e2e/docexamples ./e2e/redisloss ./e2e/netfault \
	./e2e/redisha ./e2e/cluster ./console ./scanner ./e2e/secure ./e2e/pause ./ingest
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
	if [ $$rc -eq 0 ]; then $(MAKE) --no-print-directory lint || rc=$$?; fi; \
	if [ $$rc -eq 0 ]; then \
		{ clients/python/test.sh && clients/java/test.sh; } >.local/clients-test.log 2>&1 & cl=$$!; \
		$(GO) test -race -count=1 -timeout 45m -p $(TEST_P) $(SLOW_PKGS) ./... || rc=$$?; \
		wait $$cl || { clrc=$$?; [ $$rc -ne 0 ] || rc=$$clrc; }; \
		echo "clients/python/test.sh, then clients/java/test.sh (run beside go test):"; cat .local/clients-test.log; \
	fi; \
	if [ $$rc -eq 0 ]; then $(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 10s ./payload || rc=$$?; fi; \
	if [ -f $(STARTED) ]; then rm -f $(STARTED); $(STACK) down; fi; \
	exit $$rc

# Releases. VERSION: the commit's tag (v*), else dev-<commit>; -dirty for a
# modified tree. It is linked into delayd and delayctl (--version) with the
# commit, and tags the image. Files carry the commit's time.
DESCRIBE          := $(shell git describe --tags --match 'v*' --always --dirty 2>/dev/null)
VERSION           ?= $(if $(filter v%,$(DESCRIBE)),$(DESCRIBE),dev-$(or $(DESCRIBE),unknown))
REVISION          ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
PLATFORMS         := linux/amd64 linux/arm64 darwin/arm64
# The flags of the Dockerfile's build stage (tools/image uses the same).
BUILDFLAGS = -trimpath -tags timetzdata -ldflags "-s -w \
	-X github.com/delayq/delayq/internal/version.Version=$(VERSION) \
	-X github.com/delayq/delayq/internal/version.Revision=$(REVISION)"
IMAGE_DIR ?= dist/image

# The container image of the Dockerfile, built without a container engine
# (tools/image): an OCI layout and a docker-archive tar in $(IMAGE_DIR).
# `docker load -i $(IMAGE_DIR)/delayd-$(VERSION)-amd64.tar`, or push the
# layout: `skopeo copy oci:$(IMAGE_DIR)/oci:$(VERSION) docker://…`.
image:
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./tools/image -version $(VERSION) -revision $(REVISION) -out $(IMAGE_DIR)

# Static delayd and delayctl for each of $(PLATFORMS), with LICENSE,
# README.md, CHANGELOG.md and docs/*.md (README's links point there), as dist/delayq_<version>_<os>_<arch>.tar.gz,
# the Java client's jar as dist/delayq-client-<version>.jar (Maven, JDK 17),
# and their SHA-256 sums (`cd dist && sha256sum -c delayq_<version>_SHA256SUMS`).
# Needs GNU tar and sha256sum.
dist:
	@rm -rf dist/delayq_* dist/.build && mkdir -p dist/.build
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=delayq_$(VERSION)_$${os}_$${arch}; \
		mkdir -p dist/.build/$$name; \
		echo "dist: $$name"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(BUILDFLAGS) -o dist/.build/$$name/ ./cmd/delayd ./cmd/delayctl; \
		mkdir -p dist/.build/$$name/docs; \
		cp LICENSE README.md CHANGELOG.md dist/.build/$$name/; \
		cp docs/*.md dist/.build/$$name/docs/; \
		tar --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
			-C dist/.build -cf - $$name | gzip -9n >dist/$$name.tar.gz; \
	done
	@rm -rf dist/.build dist/delayq-client-*.jar
	@echo "dist: delayq-client-$(VERSION).jar"
	@rm -rf clients/java/target && cd clients/java && mvn -B -q package -DskipTests -Drevision=$(VERSION) -Dproject.build.outputTimestamp=$(SOURCE_DATE_EPOCH)
	@cp clients/java/target/delayq-client-$(VERSION).jar dist/
	@cd dist && sha256sum delayq_$(VERSION)_*.tar.gz delayq-client-$(VERSION).jar >delayq_$(VERSION)_SHA256SUMS && cat delayq_$(VERSION)_SHA256SUMS

# The fault tests alone, each printing its summary line (-v): e2e/fault
# (one node of each service stopped and killed), e2e/failover (Kafka and
# HBase as clusters: brokers and a RegionServer killed, regions moved, the
# HBase master killed), e2e/redisha (Redis failovers) and e2e/redisloss
# (the Redis index lost). Each starts a private stack on ports of its own;
# e2e/redisha and e2e/redisloss use the shared stack's HBase (`make up`).
# e2e/netfault puts a fault-injecting proxy between delayd and each
# service: `make test` runs two of its six tests, this target all of them
# (DELAYQ_NETFAULT_ALL=1). `make test` runs the others too, e2e/fault's and
# e2e/failover's in their short form; this target their soak-length form
# (DELAYQ_FAULTS_FULL=1: e2e/fault 20 kill -9, 12 rolling restarts, HBase
# away 60 s; e2e/failover a broker away 30 s, a RegionServer 60 s). Each
# package doc says how long it takes.
faults:
	DELAYQ_NETFAULT_ALL=1 DELAYQ_FAULTS_FULL=1 $(GO) test -count=1 -v -timeout 60m ./e2e/fault ./e2e/failover ./e2e/redisha ./e2e/redisloss ./e2e/netfault

# The nemesis soak (e2e/soak, build tag soak; docs/faults.md): delayd on a
# private stack under mixed traffic and a seeded random schedule of
# overlapping faults for SOAK_MINUTES (20), SOAK_DELAYD delayd (2, 1-3),
# SOAK_RATE tasks/s (100). It prints its seed: SOAK_SEED=n replays a
# schedule.
SOAK_MINUTES ?= 20
SOAK_DELAYD  ?= 2
SOAK_RATE    ?= 100
soak:
	SOAK_MINUTES=$(SOAK_MINUTES) SOAK_DELAYD=$(SOAK_DELAYD) SOAK_RATE=$(SOAK_RATE) SOAK_SEED=$(SOAK_SEED) \
		$(GO) test -tags soak -count=1 -v -timeout $(shell awk 'BEGIN{printf "%ds", $(SOAK_MINUTES)*60+1800}') -run '^TestSoak$$' ./e2e/soak

# Issue 27's total-loss scenario at full size, outside `make test`: 200,000
# tasks pending over the next 10 minutes, FLUSHALL and a wiped Redis under
# steady input (e2e/redisloss on its private Kafka and Redis; about 13 min).
redisloss-large:
	DELAYQ_REDISLOSS_TASKS=200000 DELAYQ_REDISLOSS_SPAN=10m $(GO) test -count=1 -v -timeout 30m -run TestFlushAll ./e2e/redisloss
