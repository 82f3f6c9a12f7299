# Shortcuts for dev.py, which needs nothing but Python 3.11 and pip.
.PHONY: demo test lint bench

demo:
	python3 dev.py demo

test:
	python3 dev.py test

lint:
	python3 dev.py lint

bench:
	.venv/bin/python benchmarks/check_scale.py
	.venv/bin/python benchmarks/eval_throughput.py
