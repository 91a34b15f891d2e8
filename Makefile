# Thrust's two set-up commands: `make run` (the main job) and `make test` (the whole suite).
# Both create .venv and install into it; torch is installed first, pinned, so nothing pulls a CUDA build.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.thrust-installed
NODE_MODULES := web/node_modules/.package-lock.json
TORCH := torch==2.13.0

.PHONY: run test lint format web install chromium strace bench peers validate reference-bundles clean

# The reference bundles in export/: env:algo pairs, each trained with its preset and seed 0, in export/NAME-ALGO
# (NAME: the env in lower case without its -vN).
# env:algo[:steps]: the preset's budget unless a step count follows (MinAtar's preset is 5M steps, HalfCheetah's 1M;
# 100k plays well)
REFERENCE := bandit:ppo cartpole:ppo pendulum:sac snake:dqn cartpole-novel:recurrent_ppo cards:ppo \
  minatar-breakout:dqn:100000 HalfCheetah-v5:sac:100000

run: install $(NODE_MODULES)
	$(PY) -m thrust_app app

# THRUST_REQUIRE_BROWSER: the browser tests fail rather than skip when Chromium is missing.
# TEST_WORKERS pytest-xdist processes share the tests (most wait on subprocesses, browsers and sweeps, so two
# workers on two cores take the suite from about 23 to 14 minutes); --dist loadgroup keeps the tests marked
# xdist_group("ray") in one worker, one local Ray at a time. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: install $(NODE_MODULES) chromium strace
	THRUST_REQUIRE_BROWSER=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup

# ruff (configured in pyproject.toml) for Python, Biome (web/biome.json, pinned in web/package.json) for the
# player's JavaScript: `lint` checks (CI runs it), `format` rewrites.
lint: install $(NODE_MODULES)
	cd web && ./node_modules/.bin/biome check src
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: install $(NODE_MODULES)
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .
	cd web && ./node_modules/.bin/biome check --write src

web: install $(NODE_MODULES)
	$(PY) -m thrust_app web

# Every bench in quick (smoke) mode; drop --quick for the numbers in docs/backends.md.
bench: install $(NODE_MODULES)
	$(PY) benches/env_step.py --seconds 0.2 --rounds 1
	$(PY) benches/trainer_throughput.py --quick
	$(PY) benches/onnx_policies.py --quick
	$(PY) benches/batched_ppo.py --quick --envs 1,64,1024
	$(PY) benches/update_floor.py --rounds 1
	$(PY) benches/watch_render.py --rounds 1
	$(PY) benches/batched_seeds.py --seeds 1,4 --timesteps 2560 --rounds 1
	$(PY) benches/stacked_update.py --seeds 4 --rounds 1 --steps 10

peers: install
	$(PY) -m pip install -q stable-baselines3 $(TORCH)
	$(PY) benches/peers.py
	$(PY) benches/peers.py --peer cleanrl
	$(PY) benches/peers.py --peer sbx
	$(PY) benches/mujoco_speed.py
	$(PY) benches/mujoco_speed.py --pairs sac:HalfCheetah-v5 --set update=numba

# Full learning runs, an hour or more each on 2 cores: every preset's validation, then each against SB3.
validate: install
	$(PY) benches/validation.py
	$(PY) benches/parity.py

reference-bundles: install
	for pair in $(REFERENCE); do \
	  env=$${pair%%:*}; rest=$${pair#*:}; algo=$${rest%%:*}; steps=$${rest#$$algo}; steps=$${steps#:}; \
	  name=$$(echo $$env | tr A-Z a-z | sed 's/-v[0-9]*$$//'); run=runs/reference-$$name-$$algo; \
	  rm -rf $$run && \
	  $(PY) -m thrust_app train $$algo $$env --seed 0 --run-dir $$run --quiet $${steps:+--timesteps $$steps} && \
	  $(PY) -m thrust_app export $$run --out export/$$name-$$algo --force || exit 1; \
	done

install: $(STAMP)

# Debian tools the tests need, installed here where this machine allows it (root with apt-get),
# otherwise one line saying how: $(call debian_tool,PROGRAM,PACKAGE,WHAT NEEDS IT)
define debian_tool
@command -v $(1) >/dev/null || { \
  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
    echo "make: installing Debian's $(2) for $(3)"; \
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2); \
  else \
    echo "make: $(3) need Debian's $(2): run 'sudo apt-get install $(2)', then make test again" >&2; \
    exit 1; \
  fi; }
endef

# The browser tests drive Debian's Chromium (never a downloaded browser).
chromium:
	$(call debian_tool,/usr/bin/chromium,chromium,the browser tests)

# The Ray sweep test traces the sockets Ray opens (strace -f -e trace=connect).
strace:
	$(call debian_tool,strace,strace,the Ray sweep tests)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml Makefile | $(PY)
	@echo "make: installing $(TORCH) (CPU build) into $(VENV): the largest download, a minute or more on a fresh machine"
	$(PY) -m pip install --disable-pip-version-check --progress-bar on $(TORCH)
	@echo "make: installing Thrust and its dependencies (streamlit, onnx, onnxruntime, gymnasium, test tools)"
	$(PY) -m pip install --disable-pip-version-check --progress-bar on -e ".[test]"
	@echo "make: compiling the numba updates (update=numba) into numba's cache, so no run pays it (about 20 s)"
	$(PY) -m thrust_app.training.precompile
	touch $@

$(NODE_MODULES): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
