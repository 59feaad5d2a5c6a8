# The two commands a newcomer types: `make demo` and `make test`. Each installs what it needs.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
ALL_EXTRAS := agent,stack,analytics,controllers,demo,dev,ml
# what `make demo` needs: the stack, the controllers and the simulated region, Dagster and dbt, the progress
# panel; no PyTorch (ml) nor the test tools (dev), which only `make test` installs
DEMO_EXTRAS := agent,stack,analytics,controllers,demo

.PHONY: demo test test-fast lint typecheck unit bench proto venv clean

venv:
	@scripts/bootstrap-venv.sh $(ALL_EXTRAS)

demo:
	@scripts/bootstrap-venv.sh $(DEMO_EXTRAS)
	$(BIN)/sco demo

# The whole suite on two workers; tests that share a test bed or a long session fixture carry one
# `xdist_group` and run in order on one worker (--dist loadgroup).
# mypy (about 90 s of one core) runs while the test beds install and start, which mostly wait on apt and daemons.
test: venv
	@$(BIN)/mypy > .mypy-test.log 2>&1 & mypy=$$!; \
	  scripts/testbeds.sh; beds=$$?; \
	  wait $$mypy; typed=$$?; cat .mypy-test.log; rm -f .mypy-test.log; \
	  [ $$beds = 0 ] && [ $$typed = 0 ]
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/pytest -n 2 --dist loadgroup --durations=15

# Lint, types, layers and every test that starts no PostgreSQL/NATS/ClickHouse, needs no test bed and is not slow
# (markers in tests/conftest.py): about a minute on a 2-core machine.
test-fast: venv
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -q -n 2 -m "not services and not testbed and not slow"

lint: venv
	$(BIN)/ruff check .

typecheck: venv
	$(BIN)/mypy

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
