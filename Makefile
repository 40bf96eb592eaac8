# aicluster.infra: the two commands a newcomer needs are `make demo` and `make test`.
# Every target installs what it needs itself (Debian 12, root), idempotently.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON      ?= python3
VENV        := .venv
STAMP       := $(VENV)/.installed
LAB_NAME    ?= aic
LAB_COMPUTE ?= 3
# The simulated hardware of the GPU hosts (lab/hwsim/profiles; lab.py's default: hgx-h100-ib). A RoCE lab beside the
# default one: make demo LAB_PROFILE=hgx-h100-roce LAB_NAME=roce
LAB_PROFILE ?=
# Each lab has its own inventory and fact cache (lab/lab.py lab_inventory, lab_fact_cache): the default lab aic uses
# inventories/lab, another lab inventories/lab-$(LAB_NAME), so two labs run side by side.
LAB_INVENTORY := $(if $(filter aic,$(LAB_NAME)),inventories/lab,inventories/lab-$(LAB_NAME))
LAB_FACTS     := $(CURDIR)/.cache/$(if $(filter aic,$(LAB_NAME)),facts,facts-$(LAB_NAME))
SCENARIOS   ?= $(sort $(notdir $(patsubst %/molecule.yml,%,$(wildcard molecule/*/molecule.yml))))
# shellcheck: ansible-test sanity checks shell scripts with it; slurm-client: hostlist tests cross-check with the real scontrol;
# chromium: the acceptance report is rendered headless in a test; libxml2-utils: xmllint validates junit.xml;
# prometheus: promtool checks metrics.prom, the alert rules (promtool test rules) and the dashboards' queries;
# gcc, libslurm-dev, squashfs-tools, busybox-static: the lab mirror builds its Pyxis stand-in (a real SPANK plugin for
# Debian's Slurm) and its offline test image (lab/mirror/hpc_packages.py)
SYSTEM_PACKAGES := podman runc debootstrap openssh-client git python3-venv shellcheck slurm-client chromium libxml2-utils prometheus gcc libslurm-dev squashfs-tools busybox-static

export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.collections
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_FORCE_COLOR ?= 0
export PY_COLORS ?= 0

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# ------------------------------------------------------------------ setup
.PHONY: system-deps
system-deps: ## install podman, runc, debootstrap (apt), once
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "setup: installing $$missing"; \
	  apt-get update -qq || true; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -r requirements-dev.txt
	@touch $@

.PHONY: venv
venv: $(STAMP) $(VENV)/bin/aicluster ## the Python virtual environment: runtime (requirements.txt) and test tools (requirements-dev.txt)

# `aicluster run STAGE -i INVENTORY` (bin/aicluster) with this venv's Python, activated or not
$(VENV)/bin/aicluster: $(STAMP)
	@printf '#!/bin/sh\nexec "%s/bin/python" "%s/bin/aicluster" "$$@"\n' "$(CURDIR)/$(VENV)" "$(CURDIR)" > $@
	@chmod 0755 $@

.PHONY: collections
collections: $(STAMP) ## containers.podman etc. (offline, from the ansible wheel) + link to this collection
	@$(VENV)/bin/python scripts/install-collections.py

.PHONY: setup
setup: system-deps venv collections ## everything the demo and the tests need
	@$(VENV)/bin/python lab/lab.py setup

# ------------------------------------------------------------------ lab
.PHONY: lab-image lab-up lab-down lab-status
lab-image: setup ## build the lab image (cached by recipe hash)
	@$(VENV)/bin/python lab/lab.py image
lab-up: lab-image ## start the lab (ctl01 + gpu01..gpuNN) and write $(LAB_INVENTORY)/hosts.yml
	@$(VENV)/bin/python lab/lab.py up --name $(LAB_NAME) --compute $(LAB_COMPUTE)$(if $(LAB_PROFILE), --profile $(LAB_PROFILE))
lab-down: ## remove the lab's containers, network and volumes (nothing else)
	@$(VENV)/bin/python lab/lab.py down --name $(LAB_NAME)
lab-status:
	@$(VENV)/bin/python lab/lab.py status --name $(LAB_NAME)

# ------------------------------------------------------------------ demo
.PHONY: demo
demo: lab-up ## bring up the lab and run playbooks/site.yml against it
	@run=artifacts/demo-$$(date -u +%Y%m%dT%H%M%SZ); mkdir -p $$run; \
	echo "demo: ansible-playbook -i $(LAB_INVENTORY) playbooks/site.yml (log: $$run/ansible.log)"; \
	set +e; ANSIBLE_LOG_PATH=$$run/ansible.log ANSIBLE_CACHE_PLUGIN_CONNECTION=$(LAB_FACTS) \
	  ansible-playbook -i $(LAB_INVENTORY) playbooks/site.yml \
	  -e verify_gate_artifacts_dir=$(CURDIR)/$$run > $$run/output.txt 2>&1; rc=$$?; set -e; \
	sed -n '/^PLAY RECAP/,$$p' $$run/output.txt; \
	echo "demo: full output $$run/output.txt, log $$run/ansible.log"; \
	results=$$(ls -1d $$run/verify-*/ 2>/dev/null | tail -1 || true); \
	if [ -n "$$results" ]; then \
	  echo "demo: verification results $${results}results.json"; \
	  echo "demo: acceptance report $${results}report.html (junit.xml and summary.md next to it)"; \
	fi; \
	ln -sfn $$(basename $$run) artifacts/demo-latest; \
	exit $$rc

.PHONY: drift
drift: venv collections ## the drift report of the running lab: playbooks/drift.yml --check --diff (docs/drift.md)
	ANSIBLE_CACHE_PLUGIN_CONNECTION=$(LAB_FACTS) ansible-playbook -i $(LAB_INVENTORY) playbooks/drift.yml --check --diff -e aicluster_fail_on_drift=$(if $(FAIL_ON_DRIFT),true,false)

# ------------------------------------------------------------------ tests
# make test runs its checks as parallel jobs, TEST_JOBS at a time (default 2, this CI machine's cores): the lab checks
# and molecule scenarios wait on services, SSH and polls much of the time, and the static checks use one core, so two
# at a time take about a third less wall time than one after another (docs/development.md). Longest first, so the
# jobs end together; each job's output is printed whole when it ends (--output-sync). TEST_JOBS=1: one at a time.
# On a failure the last lines name the failed checks and their failure lines (scripts/test-summary.py), because CI
# shows only the tail of the output and a failed check's own lines may be thousands of lines above it.
TEST_JOBS  ?= 2
TEST_ORDER := lab-check molecule-bringup molecule-slurm molecule-fabric molecule-stack molecule-services molecule-verify \
              unit sanity lint molecule-hwsim build-check molecule-preflight
# Scenarios not yet green end to end stay out of make test until one full run passes (make molecule-<name> runs it).
TEST_PENDING :=
TEST_ALL   := $(TEST_ORDER) $(filter-out $(TEST_ORDER) $(TEST_PENDING),$(addprefix molecule-,$(SCENARIOS)))

.PHONY: test
test: setup lab-image ## everything CI runs: unit, lint, sanity, build-check, lab-check, every molecule scenario
	@echo "test: $(words $(TEST_ALL)) checks, $(TEST_JOBS) at a time: $(TEST_ALL)"
	@start=$$(date +%s); mkdir -p .cache; rc=0; \
	$(MAKE) --no-print-directory -k -j$(TEST_JOBS) --output-sync=target $(TEST_ALL) TEST_TIMED=1 \
	  NEEDS_VENV= NEEDS_LAB= 2>&1 | tee .cache/test.log || rc=$$?; \
	if [ $$rc -ne 0 ]; then python3 scripts/test-summary.py .cache/test.log; \
	  echo "test: failed (rc $$rc) after $$(( $$(date +%s) - start )) s; the whole log: .cache/test.log"; exit $$rc; fi; \
	echo "test: all passed in $$(( $$(date +%s) - start )) s"

# What the checks need; make test has made both before its jobs start (empty there, so the jobs start in TEST_ORDER).
NEEDS_VENV := venv collections
NEEDS_LAB  := lab-image

# With TEST_TIMED (make test's jobs): a line with the check's own wall time when it ends.
TIMED = $(if $(TEST_TIMED),@start=$$(date +%s); trap 'echo "test: $@ ended with rc $$? in $$(( $$(date +%s) - start )) s"' EXIT;)

.PHONY: unit
unit: $(NEEDS_VENV) ## pytest: parsers, modules, filters, lab tooling (tests/unit)
	$(TIMED) $(VENV)/bin/python -m pytest -q tests/unit

.PHONY: lint
# ansible-lint's syntax check reads ansible.cfg's inventory: with the demo lab up that is inventories/lab/hosts.yml,
# where slurm_controller has one host and molecule/slurm's `slurm_controller[1]` is an error, not a warning. Lint
# against an empty inventory, so its result does not depend on which lab is up.
lint: $(NEEDS_VENV) ## ansible-lint (production profile) and antsibull-docs on every plugin's and role's documentation
	@mkdir -p .cache/lint-inventory
	$(TIMED) env ANSIBLE_INVENTORY=$(CURDIR)/.cache/lint-inventory ansible-lint --offline --profile production && \
	  (cd .collections/ansible_collections/aicluster/infra && antsibull-docs lint-collection-docs --plugin-docs .)

.PHONY: sanity
sanity: $(NEEDS_VENV) ## ansible-test sanity on a copy laid out as ansible_collections/aicluster/infra
	$(TIMED) scripts/ansible-test-sanity.sh

.PHONY: build-check
build-check: $(NEEDS_VENV) ## build the collection tarball, install it into an empty path, resolve it by FQCN
	$(TIMED) scripts/build-check.sh

.PHONY: ee-context
ee-context: build-check ## the execution environment's build context in build/ee/context (docs/awx.md)
	@echo "ee-context: podman build -t aicluster-ee build/ee/context (needs the base image's registry)"

.PHONY: lab-check
lab-check: $(NEEDS_LAB) ## tests/lab: the oldest ansible-core admitted, the README's real-cluster path verbatim, two labs side by side (~10 min)
	$(TIMED) $(VENV)/bin/python -m pytest -q --durations=0 tests/lab

.PHONY: molecule
molecule: lab-image ## every molecule scenario (lab hosts, podman), one after another
	@for s in $(SCENARIOS); do echo "molecule: scenario $$s"; molecule test -s $$s || exit 1; done

.PHONY: $(addprefix molecule-,$(SCENARIOS))
$(addprefix molecule-,$(SCENARIOS)): molecule-%: $(NEEDS_LAB) ## one scenario: make molecule-slurm
	$(TIMED) molecule test -s $*

# The lab benches bring up labs of their own and take minutes; `make bench` runs the others.
LAB_BENCHES := bench/noop.py bench/fleet.py

.PHONY: bench
bench: venv collections ## benchmarks that print figures (not the lab benches below)
	@for b in $(filter-out $(LAB_BENCHES),$(wildcard bench/[a-z]*.py)); do echo "== $$b"; PYTHONPATH=$(CURDIR)/.collections $(VENV)/bin/python $$b; done

.PHONY: bench-noop
bench-noop: lab-image ## the no-op re-run against the first converge on a fresh 4-host lab (docs/scale.md)
	$(VENV)/bin/python bench/noop.py

.PHONY: bench-fleet
bench-fleet: lab-image ## the no-op and drift runs on labs of 2, 4, 8 and 16 GPU hosts (docs/scale.md; ~6 GB, 30 min)
	$(VENV)/bin/python bench/fleet.py

.PHONY: changelog
changelog: venv ## lint the changelog fragments
	antsibull-changelog lint

.PHONY: clean
clean: ## remove build outputs (not the lab: use lab-down)
	rm -rf build artifacts/*.tar.gz aicluster-infra-*.tar.gz tests/output
