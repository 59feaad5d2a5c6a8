# The two commands a newcomer types: `make demo` and `make test`. Each installs what it needs.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
ALL_EXTRAS := agent,stack,analytics,controllers,dev

.PHONY: demo test lint typecheck unit bench proto venv clean

venv:
	@scripts/bootstrap-venv.sh $(ALL_EXTRAS)

demo: venv
	$(BIN)/sco demo

test: venv
	@scripts/testbeds.sh
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest

lint: venv
	$(BIN)/ruff check .

typecheck: venv
	$(BIN)/mypy

bench: venv
	$(BIN)/python -m bench

proto: venv
	$(BIN)/python -m grpc_tools.protoc -Icontrollers/plugpool/proto --python_out=controllers/plugpool/proto \
	  --grpc_python_out=controllers/plugpool/proto --pyi_out=controllers/plugpool/proto \
	  controllers/plugpool/proto/externalgrpc.proto

clean:
	rm -rf $(VENV) .sco .pytest_cache .mypy_cache .ruff_cache
