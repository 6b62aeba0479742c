# The two entry points of the README. Each creates .venv and installs what it needs first:
# `make demo` the pipeline with the demo's image server and the review, `make test` (and
# `make setup`, `make lint`) also the test tools, the Google Cloud extra and the audits.
.PHONY: demo test test-benchmarks setup lint

SETUP_INPUTS := pyproject.toml constraints.txt scripts/setup.sh

setup: .venv/.setup-test

.venv/.setup-demo: $(SETUP_INPUTS)
	bash scripts/setup.sh demo
	touch $@

# The test set-up holds the demo's: it stamps both.
.venv/.setup-test: $(SETUP_INPUTS)
	bash scripts/setup.sh test
	touch $@ .venv/.setup-demo

demo: .venv/.setup-demo
	.venv/bin/imagenot -v build --config configs/demo.yaml --out runs/demo
	@echo "Check the labels in a browser (then open the address it prints): .venv/bin/imagenot review serve --run runs/demo"

test: setup
	.venv/bin/python -m pytest -n 3 -m "not benchmarks" --durations=15

# Every script of benchmarks/ at a tiny size (issue 42): CI runs it after `make test`.
test-benchmarks: setup
	.venv/bin/python -m pytest -n 2 -m benchmarks

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
