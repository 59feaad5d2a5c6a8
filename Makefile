# The two commands a newcomer types: `make demo` and `make test`. Each installs what it needs.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
ALL_EXTRAS := agent,stack,analytics,controllers,demo,dev,typecheck,ml
# what `make demo` needs: the stack, the controllers and the simulated region, Dagster and dbt, the progress
# panel; no PyTorch (ml) nor the test tools (dev), which only `make test` installs
DEMO_EXTRAS := agent,stack,analytics,controllers,demo
# what the fast tier imports: every extra but PyTorch (ml) and the type checker (typecheck), which it never runs
FAST_EXTRAS := agent,stack,analytics,controllers,demo,dev
# a command that may be silent for a while prints "LABEL: still working (N s)" after 10 s of silence
HEARTBEAT := scripts/heartbeat.sh
# the loop lives on compiled-module caches (pytest's rewritten test modules among them: ~6 s of CPU a collection)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-fast lint typecheck unit bench proto venv fast-venv clean

venv:
	@scripts/bootstrap-venv.sh $(ALL_EXTRAS)

fast-venv:
	@scripts/bootstrap-venv.sh $(FAST_EXTRAS)

# The demo leaves its stack running for `dagster dev` on the same data (docs/demo.md) and ends by saying so;
# `make demo DEMO_KEEP=0` stops it instead.
DEMO_KEEP ?= 1
DEMO_STACK := .sco/demo/stack
demo:
	@scripts/bootstrap-venv.sh $(DEMO_EXTRAS)
	@$(BIN)/sco demo; status=$$?; \
	  if [ "$(DEMO_KEEP)" = 0 ]; then \
	    echo "make demo: stopping the demo's stack"; SCO_HOME=$(DEMO_STACK) $(BIN)/sco down; \
	  else \
	    echo "make demo: still running, the demo's stack (for dagster dev on the same data, docs/demo.md):"; \
	    SCO_HOME=$(DEMO_STACK) $(BIN)/sco status; \
	    echo "make demo: stop it with: SCO_HOME=$(DEMO_STACK) $(BIN)/sco down   (or: make demo DEMO_KEEP=0)"; \
	  fi; exit $$status

# The whole suite on two workers; tests that share a test bed or a long session fixture carry one
# `xdist_group` and run in order on one worker (--dist loadgroup).
# mypy (about 90 s of one core) runs while the test beds install and start, which mostly wait on apt and daemons.
test: venv
	@$(BIN)/mypy > .mypy-test.log 2>&1 & mypy=$$!; \
	  scripts/testbeds.sh; beds=$$?; \
	  while kill -0 $$mypy 2>/dev/null; do sleep 10; echo "make test: mypy still checking ($$SECONDS s)"; done; \
	  wait $$mypy; typed=$$?; cat .mypy-test.log; rm -f .mypy-test.log; \
	  [ $$beds = 0 ] && [ $$typed = 0 ]
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	@$(HEARTBEAT) pytest $(BIN)/pytest -n 2 --dist loadgroup --durations=15

# Lint, layers and every test that starts no PostgreSQL/NATS/ClickHouse, needs no test bed and is not slow
# (markers in tests/conftest.py): under a minute on a quiet 2-core machine once the venv exists. No type check
# (make typecheck, and make test, run it); --dist loadgroup keeps the tests that read the built Dagster definitions
# on the one worker that built them (xdist_group "dagster-definitions"). Three workers on two cores: the slowest
# fast tests wait (drain budgets, doubles' latencies), and a third worker uses the cores meanwhile (measured:
# 49.8 s against 59.9 s on two, docs/benchmarks.md).
test-fast: fast-venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	@$(HEARTBEAT) pytest $(BIN)/pytest -q -n 3 --dist loadgroup -m "not services and not testbed and not slow"

lint: venv
	$(BIN)/ruff check .

# mypy keeps its cache in .mypy_cache: a second run checks only what changed
typecheck: venv
	@$(HEARTBEAT) mypy $(BIN)/mypy

bench: venv
	$(BIN)/python -m bench

proto: venv
	# -I. so the generated modules import each other as controllers.plugpool.proto.*
	$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. \
	  controllers/plugpool/proto/k8s_meta_v1.proto controllers/plugpool/proto/k8s_quantity.proto \
	  controllers/plugpool/proto/k8s_core_v1.proto controllers/plugpool/proto/k8s_resource_v1.proto
	$(BIN)/python -m grpc_tools.protoc -I. --python_out=. --grpc_python_out=. --pyi_out=. \
	  controllers/plugpool/proto/externalgrpc.proto
	sed -i '1i # mypy: ignore-errors' controllers/plugpool/proto/externalgrpc_pb2_grpc.py controllers/plugpool/proto/*_pb2.pyi

clean:
	rm -rf $(VENV) .sco .pytest_cache .mypy_cache .ruff_cache
