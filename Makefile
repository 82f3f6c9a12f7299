# Shortcuts for dev.py, which needs nothing but Python 3.11 and pip.
.PHONY: demo test lint bench

demo:
	python3 dev.py demo

test:
	python3 dev.py test

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

bench:
	.venv/bin/python benchmarks/check_scale.py
	.venv/bin/python benchmarks/eval_throughput.py
