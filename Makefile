# Thrust's two set-up commands: `make run` (the main job) and `make test` (the whole suite).
# Both create .venv and install into it; torch is installed first, pinned, so nothing pulls a CUDA build.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.thrust-installed
TORCH := torch==2.13.0

.PHONY: run test install demo bench clean

run: install
	$(PY) -m thrust_app demo

test: install
	$(PY) -m pytest

bench: install
	$(PY) benches/env_step.py

install: $(STAMP)

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml Makefile | $(PY)
	$(PY) -m pip install --disable-pip-version-check -q $(TORCH)
	$(PY) -m pip install --disable-pip-version-check -q -e ".[test]"
	touch $@

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
