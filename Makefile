# The two commands a new user needs: `make run` and `make test`. Everything else is a step of those.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
APM := $(VENV)/bin/apm
STAMP := $(VENV)/.installed

.PHONY: help install jars up down status run test test-jvm test-unit test-integration test-e2e lint mypy format \
        cluster-up cluster-down cluster-status test-cluster \
        browser debs agent-deb bench bench-ingest bench-agent bench-aggregator bench-aggregator-breadth bench-aggregator-by-server bench-aggregator-nodedup bench-aggregator-order bench-dashboard bench-dashboard-panels bench-dashboard-servers bench-storage bench-loadgen bench-pipeline bench-alerting bench-faults \
        clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install the project with every extra

jars: install  ## resolve Kafka, Cassandra and the Spark Kafka connector, and build the aggregator's JVM operator, through Maven
	$(APM) stack fetch

up: jars  ## start Kafka and Cassandra (idempotent)
	$(APM) stack up

down:  ## stop the platform and the engines
	-@[ -x $(APM) ] && $(APM) run --down || true
	-@[ -x $(APM) ] && $(APM) stack down || true

status:  ## what runs where
	$(APM) stack status

cluster-up: jars  ## the multi-node cluster on this machine: 3 Kafka, a 3-node Cassandra ring, Spark master + 2 workers, then the platform (state in var/cluster)
	$(APM) cluster up

cluster-down:  ## stop the cluster's platform, then its engines
	-@[ -x $(APM) ] && $(APM) cluster down || true

cluster-status:  ## each cluster node: pid, health, resident memory, and the sum against 12 GiB
	$(APM) cluster status

run: up  ## install, fetch, start the engines, then the whole platform (Ctrl-C stops it)
	$(APM) run

browser: debs
debs:  ## Debian's packages the tests use as real peers: chromium + chromedriver (browser tests), docker-compose (compose config test), nginx (the cluster's load balancer), prometheus (interop), prometheus-alertmanager (alerting), systemd (systemd-analyze rates the agent's unit), openssl (the TLS tests' CA); mmdebstrap, dpkg-dev, lintian, ansible-core, iproute2 (the agent's .deb on a clean root; hosts as network namespaces), nftables (network faults between those hosts)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null && \
	  command -v docker-compose >/dev/null && command -v nginx >/dev/null && \
	  command -v prometheus >/dev/null && command -v prometheus-alertmanager >/dev/null && \
	  command -v systemd-analyze >/dev/null && command -v openssl >/dev/null && \
	  command -v mmdebstrap >/dev/null && \
	  command -v dpkg-architecture >/dev/null && command -v lintian >/dev/null && \
	  command -v ansible-playbook >/dev/null && command -v ip >/dev/null && \
	  command -v nft >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      chromium chromium-driver docker-compose nginx prometheus prometheus-alertmanager systemd \
	      openssl mmdebstrap dpkg-dev lintian ansible-core iproute2 nftables; }

agent-deb: install  ## the agent as a Debian package: dist/apm-agent_<version>_<arch>.deb (VERSION=... to override), then lintian
	deploy/deb/build.sh $(if $(VERSION),--version $(VERSION))
	lintian --fail-on error,warning dist/apm-agent_*$(VERSION)*_$$(dpkg --print-architecture).deb

lint: install mypy  ## ruff check, ruff format --check and mypy (also the pre-commit hooks)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

mypy: install
	$(VENV)/bin/mypy apm agent ingest storage aggregator dashboard loadgen alerting launch bench

format: install  ## rewrite the tree as make lint wants it (ruff format, ruff check --fix)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

# pytest exits 5 when it collected no test: that is a failure here, not a pass.
define run_pytest
	@set +e; $(VENV)/bin/pytest $(1); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo 'pytest collected no tests for: $(1)'; exit 1; fi; exit $$rc
endef

test: install lint test-jvm jars debs  ## lint, the JVM unit tests, then every tier against the real engines
	$(call run_pytest,-m "(unit or integration or e2e) and not cluster" tests)

test-cluster: install jars debs  ## the cluster tier: faults injected into the multi-node cluster, its Kafka brokers on hosts of their own (network namespaces, root), a broker partitioned among them (< 20 min)
	$(call run_pytest,-m cluster tests/cluster tests/launch/cluster)

test-jvm:  ## the unit tests of the aggregator's JVM operator (aggregator/jvm), through Maven
	mvn -q -B -f aggregator/jvm/pom.xml test -DbuildDir=$(CURDIR)/.cache/jvm-test

test-unit: install  ## the inner loop: pure logic, no engines, about a minute
	$(call run_pytest,-m unit tests)

test-integration: jars
	$(call run_pytest,-m integration tests)

test-e2e: jars debs
	$(call run_pytest,-m e2e tests)

bench: bench-agent bench-ingest bench-storage bench-aggregator bench-dashboard bench-loadgen bench-pipeline  ## every benchmark, then docs/BENCHMARKS.md

bench-agent: agent-deb debs  ## the agent's overhead; the .deb's size, its installed size, the packaged agent's RSS and CPU at 1 Hz on a clean bookworm root
	deb=$$(ls -t dist/apm-agent_*_$$(dpkg --print-architecture).deb | head -1) && \
	  $(PY) -m tests.support.cleanhost $(CURDIR)/.cache/bench-agent-root --install $$deb && \
	  $(PY) -m bench.agent --deb $$deb --clean-root $(CURDIR)/.cache/bench-agent-root

bench-ingest: up  ## the ingest's rate and CPU, its protobuf bounds, and what host tags cost it
	$(PY) -m bench.ingest
	$(PY) -m bench.ingest_decode
	$(PY) -m bench.ingest_tags

bench-aggregator: up  ## the dedup state's arrival-order figure, the issue config, then the breadth config (each its own Spark session)
	$(PY) -m bench.aggregator_order
	$(PY) -m bench.aggregator
	$(PY) -m bench.aggregator --config breadth

bench-aggregator-breadth: up  ## 200 metric topics, one query each, a 1 Hz fleet of 200 servers
	$(PY) -m bench.aggregator --config breadth

bench-aggregator-by-server: up  ## issue, then one, then ten of its queries BY server over 10,000 servers, in one section with each one's highest sustained rate (issue 35)
	$(PY) -m bench.aggregator_by_server

bench-aggregator-nodedup: up  ## the aggregator without its dedup stage (the cost of exact dedup)
	$(PY) -m bench.aggregator --no-dedup

bench-aggregator-order:  ## the JVM dedup state: 200,000 offsets for one key inserted ascending, descending, random (v3 vs v4); no stack needed
	$(PY) -m bench.aggregator_order

bench-dashboard: up  ## one 24 h chart, a saved 8-panel 24 h dashboard (bench-dashboard-panels), a BY server query at 10,000 servers (bench-dashboard-servers)
	$(PY) -m bench.dashboard
	$(PY) -m bench.dashboard_panels
	$(PY) -m bench.dashboard_servers

bench-dashboard-servers: up  ## a BY server query's lines and TOP 10 table at 10,000 servers, in-process
	$(PY) -m bench.dashboard_servers

bench-dashboard-panels: up  ## a saved dashboard of 8 panels over 24 h, drawn cold in headless Chromium
	$(PY) -m bench.dashboard_panels

bench-storage: up
	$(PY) -m bench.storage
	$(PY) -m bench.storage_servers
	$(PY) -m bench.storage_sizes

# The pipeline load the latency is measured under again; override: make bench-alerting ALERTING_RATE=20000
ALERTING_RATE ?= 50000
bench-alerting: up jars debs  ## window end -> Alertmanager latency, quiet and under ALERTING_RATE samples/s; one evaluation cycle of 10,000 rules over 1,000 queries; one rule on a BY server query over 1,000 and 10,000 servers
	$(PY) -m bench.alerting --rate $(ALERTING_RATE)

bench-loadgen: up  ## the load generator's own CPU at 200k samples/s, generating and replaying
	$(PY) -m bench.loadgen

bench-pipeline: up
	$(PY) -m bench.pipeline

# The highest offered rate the cluster kept up with on the 2-core reference machine (see
# docs/BENCHMARKS.md, "Faults"); override: make bench-faults FAULTS_RATE=60000
FAULTS_RATE ?= 30000
bench-faults: install jars debs  ## every cluster fault at FAULTS_RATE samples/s, then docs/BENCHMARKS.md "Faults"
	@began=$$(date +%s); set +e; APM_FAULTS_RATE=$(FAULTS_RATE) $(VENV)/bin/pytest -m cluster tests/cluster; rc=$$?; \
	  took=$$(( $$(date +%s) - began )); \
	  $(PY) -m bench.faults --tier-time "$$((took / 60)) min $$((took % 60)) s" --command "make bench-faults FAULTS_RATE=$(FAULTS_RATE)"; \
	  exit $$rc

clean: down cluster-down  ## remove data and logs (keeps the jar cache)
	rm -rf var
