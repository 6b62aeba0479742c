# The two entry points of the README. Each creates .venv (and installs what it needs) first.
.PHONY: demo test setup

setup: .venv/.setup-done

.venv/.setup-done: pyproject.toml constraints.txt scripts/setup.sh
	bash scripts/setup.sh
	touch $@

demo: setup
	.venv/bin/imagenot stats --classes wordnet/data/imagenot_classes_2024-04-02.txt --out runs/demo-stats

test: setup
	.venv/bin/python -m pytest -n 2
