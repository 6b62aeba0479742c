# The two entry points of the README. Each creates .venv (and installs what it needs) first.
.PHONY: demo test test-benchmarks setup lint

setup: .venv/.setup-done

.venv/.setup-done: pyproject.toml constraints.txt scripts/setup.sh
	bash scripts/setup.sh
	touch $@

demo: setup
	.venv/bin/imagenot -v build --config configs/demo.yaml --out runs/demo
	@echo "Check the labels in a browser (then open the address it prints): .venv/bin/imagenot review serve --run runs/demo"

test: setup
	.venv/bin/python -m pytest -n 3 -m "not benchmarks"

# Every script of benchmarks/ at a tiny size (issue 42): CI runs it after `make test`.
test-benchmarks: setup
	.venv/bin/python -m pytest -n 2 -m benchmarks

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
